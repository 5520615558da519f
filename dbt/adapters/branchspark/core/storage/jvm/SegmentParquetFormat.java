package branchspark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.FileFormat$;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFooterReader;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Function1;
import scala.Option;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Spark's Parquet source that leaves out the rows a table version's deletion vectors delete (option
 * {@value #VECTORS_OPTION}: the vectors, base64): the scan gives live rows only, with no filter after
 * it. Without the option it reads as Spark's Parquet source does.
 *
 * <p>A batch's live rows move down over its deleted ones in place ({@link LiveRows}). Where the rows
 * are in the file:
 * <ul>
 *   <li>counted, for a columnar read with no filter pushed into Parquet: such a split reads its row
 *   groups in order and skips none, so the rows of a batch are at base .. base + n - 1, base being
 *   the split's first row (0 from the file's first byte; from the split's footer for a later part of
 *   a large file) plus the rows of the batches before it;
 *   <li>Spark's row index ({@code _tmp_metadata_row_index}, added to the read and left out of the
 *   result) for a read with pushed filters, which may skip row groups or pages, and for a read row by
 *   row (a schema too wide for batches, or with a type {@link LiveRows} does not move).
 * </ul>
 * A scan builds one of the two readers: each build broadcasts a Hadoop configuration.
 */
public class SegmentParquetFormat extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;
  public static final String VECTORS_OPTION = "branchspark.deletionvectors";
  private static final String ROW_INDEX = ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME();
  // path -> the ETag the catalog recorded (KnownFiles): S3A's analytics stream opens a file it has the ETag of
  // without a HEAD for its metadata
  private final java.util.HashMap<String, String> etags;

  public SegmentParquetFormat() {
    this(new java.util.HashMap<>());
  }

  public SegmentParquetFormat(java.util.HashMap<String, String> etags) {
    this.etags = etags;
  }

  @Override
  public boolean supportBatch(SparkSession session, StructType schema) {
    // Batches only of columns whose deleted rows can be left out in place; others are read row by row.
    return super.supportBatch(session, schema)
        && Arrays.stream(schema.fields()).allMatch(field -> LiveRows.supports(field.dataType()));
  }

  @Override
  public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
      SparkSession session, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
      Seq<Filter> filters, Map<String, String> options, Configuration hadoopConf) {
    // each file opened with the status the scan knows: no lookup before its footer is read (KnownFileStatus)
    return KnownFileStatus.opening(
        reader(session, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf), etags);
  }

  private Function1<PartitionedFile, Iterator<InternalRow>> reader(
      SparkSession session, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
      Seq<Filter> filters, Map<String, String> options, Configuration hadoopConf) {
    Option<String> encoded = options.get(VECTORS_OPTION);
    if (encoded.isEmpty()) {
      return super.buildReaderWithPartitionValues(
          session, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf);
    }
    if (Arrays.stream(requiredSchema.fieldNames()).anyMatch(ROW_INDEX::equals)) {
      throw new IllegalArgumentException("branchspark: a read with deletion vectors cannot also ask for "
          + ROW_INDEX + "; read the row index without the " + VECTORS_OPTION + " option");
    }
    Option<String> returningBatch = options.get(FileFormat$.MODULE$.OPTION_RETURNING_BATCH());
    boolean columnar = returningBatch.isDefined() && "true".equals(returningBatch.get());
    byte[] vectors = Base64.getDecoder().decode(encoded.get());
    // One Parquet reader (each build broadcasts its Hadoop configuration, a cost per query), without the
    // vectors in that configuration: the reader below carries them once, as bytes.
    Configuration conf = new Configuration(hadoopConf);
    conf.unset(VECTORS_OPTION);
    if (columnar && filters.isEmpty()) {
      return new Reader(vectors, super.buildReaderWithPartitionValues(
          session, dataSchema, partitionSchema, requiredSchema, filters, options, conf), -1, null, fileSystemSettings(conf));
    }
    StructType indexedSchema = requiredSchema.add(ROW_INDEX, DataTypes.LongType, true);
    return new Reader(vectors, super.buildReaderWithPartitionValues(
        session, dataSchema, partitionSchema, indexedSchema, filters, options, conf), requiredSchema.length(),
        columnar ? null : withoutColumn(indexedSchema, partitionSchema, requiredSchema.length()), null);
  }

  /** The settings a task needs to open a file of the scan and read its footer. */
  private static java.util.Map<String, String> fileSystemSettings(Configuration conf) {
    java.util.Map<String, String> settings = new java.util.HashMap<>();
    for (java.util.Map.Entry<String, String> entry : conf) {
      if (entry.getKey().startsWith("fs.") || entry.getKey().startsWith("hadoop.security.")) {
        settings.put(entry.getKey(), entry.getValue());
      }
    }
    return settings;
  }

  /** Row by row: the projection of a row read with the row index onto the columns without it. */
  private static List<Expression> withoutColumn(StructType indexedSchema, StructType partitionSchema, int index) {
    List<StructField> fields = new ArrayList<>(Arrays.asList(indexedSchema.fields()));
    fields.addAll(Arrays.asList(partitionSchema.fields()));
    List<Expression> columns = new ArrayList<>();
    for (int i = 0; i < fields.size(); i++) {
      if (i != index) {
        columns.add(new BoundReference(i, fields.get(i).dataType(), fields.get(i).nullable()));
      }
    }
    return columns;
  }

  @Override
  public String toString() {
    return "Parquet (branchspark segments)";
  }

  @Override
  public boolean equals(Object other) {
    return other != null && other.getClass() == getClass();
  }

  @Override
  public int hashCode() {
    return getClass().hashCode();
  }

  /**
   * Per split: the file's vector decides which rows are left out. A read with the row index
   * (rowIndexColumn >= 0) takes the positions from it, and drops it from each batch, or from each row
   * with `unindexed`; a read without it counts them from the split's first row (fileSystem: what a
   * task needs to read a later split's footer, which says where its first row group starts).
   */
  private static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final byte[] encoded;
    private final Function1<PartitionedFile, Iterator<InternalRow>> parquet;
    private final int rowIndexColumn;
    private final List<Expression> unindexed;
    private final java.util.Map<String, String> fileSystem;
    private transient java.util.Map<String, Object> vectors;

    Reader(byte[] encoded, Function1<PartitionedFile, Iterator<InternalRow>> parquet, int rowIndexColumn,
           List<Expression> unindexed, java.util.Map<String, String> fileSystem) {
      this.encoded = encoded;
      this.parquet = parquet;
      this.rowIndexColumn = rowIndexColumn;
      this.unindexed = unindexed;
      this.fileSystem = fileSystem;
    }

    @Override
    @SuppressWarnings("unchecked")
    public Iterator<InternalRow> apply(PartitionedFile file) {
      if (vectors == null) {  // once per task: each task has its own copy of this reader
        vectors = DeletionVectors.decode(encoded);
      }
      Object vector = vectors.get(DeletionVectors.rowFileName(file.urlEncodedPath()));
      if (vector == null && rowIndexColumn < 0) {
        return parquet.apply(file);  // nothing to leave out
      }
      if (unindexed != null) {
        UnsafeProjection project = UnsafeProjection.create(CollectionConverters.asScala(unindexed).toList());
        int column = rowIndexColumn;
        return parquet.apply(file)
            .filter(row -> {
              if (row.isNullAt(column)) {
                throw DeletionVectors.missingPosition();
              }
              return !DeletionVectors.contains(vector, row.getLong(column));
            })
            .map(row -> (InternalRow) project.apply(row));
      }
      // The columnar reader hands out batches through an iterator typed as rows.
      Iterator<Object> batches = (Iterator<Object>) (Iterator<?>) parquet.apply(file);
      long first = rowIndexColumn < 0 && file.start() > 0 ? firstRow(file) : 0;
      return (Iterator<InternalRow>) (Iterator<?>) new LiveBatches(batches, vector, rowIndexColumn, first);
    }

    /**
     * The position of the first row a later split of a file reads. Parquet gives a split the row
     * groups whose middle byte lies in it; with no filter it reads all of them, in order. The footer,
     * read for the split's range as Spark's reader reads it, says where the first of them starts.
     */
    private long firstRow(PartitionedFile file) {
      Configuration conf = new Configuration();
      fileSystem.forEach(conf::set);
      try {
        List<BlockMetaData> groups = ParquetFooterReader.readFooter(
            HadoopInputFile.fromPath(file.toPath(), conf), ParquetFooterReader.buildFilter(conf, file, false)).getBlocks();
        if (groups.isEmpty()) {
          return 0;  // the split reads no row
        }
        long first = groups.get(0).getRowIndexOffset();
        long next = first;
        for (BlockMetaData group : groups) {
          if (group.getRowIndexOffset() != next || next < 0) {
            throw new IllegalStateException("branchspark: the row groups of " + file.urlEncodedPath()
                + " from byte " + file.start() + " are not consecutive rows; cannot place deleted rows");
          }
          next += group.getRowCount();
        }
        return first;
      } catch (java.io.IOException error) {
        throw new java.io.UncheckedIOException(error);
      }
    }
  }

  /** The batches of one split with their deleted rows left out (and the row index column, if read). */
  private static final class LiveBatches extends AbstractIterator<Object> {
    private final Iterator<Object> batches;
    private final Object vector;  // null: nothing to leave out, only the row index column to drop
    private final int rowIndexColumn;  // -1: positions are counted from `base`
    private long base;
    private int[] rows = new int[0];

    LiveBatches(Iterator<Object> batches, Object vector, int rowIndexColumn, long first) {
      this.batches = batches;
      this.vector = vector;
      this.rowIndexColumn = rowIndexColumn;
      this.base = first;
    }

    @Override
    public boolean hasNext() {
      return batches.hasNext();
    }

    @Override
    public Object next() {
      Object next = batches.next();
      if (!(next instanceof ColumnarBatch)) {
        throw new IllegalStateException("branchspark: a columnar Parquet read gave a row instead of a batch");
      }
      ColumnarBatch batch = (ColumnarBatch) next;
      int read = batch.numRows();
      if (rows.length < read) {
        rows = new int[read];
      }
      int live = 0;
      if (rowIndexColumn < 0) {
        for (int i = 0; i < read; i++) {
          if (!DeletionVectors.contains(vector, base + i)) {
            rows[live++] = i;
          }
        }
        base += read;
      } else {
        ColumnVector positions = batch.column(rowIndexColumn);
        for (int i = 0; i < read; i++) {
          if (positions.isNullAt(i)) {
            throw DeletionVectors.missingPosition();
          }
          if (!DeletionVectors.contains(vector, positions.getLong(i))) {
            rows[live++] = i;
          }
        }
      }
      if (live == read && rowIndexColumn < 0) {
        return batch;
      }
      int from = 0;
      while (from < live && rows[from] == from) {
        from++;
      }
      ColumnVector[] columns = new ColumnVector[batch.numCols() - (rowIndexColumn < 0 ? 0 : 1)];
      for (int i = 0, j = 0; i < batch.numCols(); i++) {
        if (i != rowIndexColumn) {
          ColumnVector column = batch.column(i);
          LiveRows.keep(column, column.dataType(), rows, from, live);
          columns[j++] = column;
        }
      }
      if (rowIndexColumn < 0) {
        batch.setNumRows(live);
        return batch;
      }
      return new ColumnarBatch(columns, live);
    }
  }
}
