package branchspark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.datasources.FileFormat$;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
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
 * <p>A batch's live rows move down over its deleted ones in place ({@link LiveRows}). The rows'
 * positions in the file come from one of two places:
 * <ul>
 *   <li>counted: a columnar read of a split that starts at the file's first byte, with no filter pushed
 *   into Parquet, reads the file's row groups in order from row 0 and skips none, so the rows of a batch
 *   are at base .. base + n - 1, base being the rows of the batches before it;
 *   <li>Spark's row index ({@code _tmp_metadata_row_index}, added to the read and left out of the
 *   result) for any other split: a later part of a large file, a read with pushed filters, or a read
 *   row by row.
 * </ul>
 * Files without deletions are read plainly. Reads row by row (a schema too wide for batches, or with a
 * type {@link LiveRows} does not move) test each row's index and drop it from the row.
 */
public class SegmentParquetFormat extends ParquetFileFormat {
  private static final long serialVersionUID = 1L;
  public static final String VECTORS_OPTION = "branchspark.deletionvectors";
  private static final String ROW_INDEX = ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME();

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
    Option<String> encoded = options.get(VECTORS_OPTION);
    if (encoded.isEmpty()) {
      return super.buildReaderWithPartitionValues(
          session, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf);
    }
    if (Arrays.stream(requiredSchema.fieldNames()).anyMatch(ROW_INDEX::equals)) {
      throw new IllegalArgumentException("branchspark: a read with deletion vectors cannot also ask for "
          + ROW_INDEX + "; read the row index without the " + VECTORS_OPTION + " option");
    }
    // Each build sets the requested schema in the configuration it broadcasts: give each its own.
    Function1<PartitionedFile, Iterator<InternalRow>> plain = super.buildReaderWithPartitionValues(
        session, dataSchema, partitionSchema, requiredSchema, filters, options, new Configuration(hadoopConf));
    StructType indexedSchema = requiredSchema.add(ROW_INDEX, DataTypes.LongType, true);
    Function1<PartitionedFile, Iterator<InternalRow>> indexed = super.buildReaderWithPartitionValues(
        session, dataSchema, partitionSchema, indexedSchema, filters, options, new Configuration(hadoopConf));
    Option<String> returningBatch = options.get(FileFormat$.MODULE$.OPTION_RETURNING_BATCH());
    boolean columnar = returningBatch.isDefined() && "true".equals(returningBatch.get());
    byte[] vectors = Base64.getDecoder().decode(encoded.get());
    return new Reader(vectors, plain, indexed, columnar, columnar && filters.isEmpty(), requiredSchema.length(),
        withoutColumn(indexedSchema, partitionSchema, requiredSchema.length()));
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

  /** Per split: the file's vector decides whether and how its rows are left out. */
  private static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private final byte[] encoded;
    private final Function1<PartitionedFile, Iterator<InternalRow>> plain;
    private final Function1<PartitionedFile, Iterator<InternalRow>> indexed;
    private final boolean columnar;
    private final boolean countable;
    private final int rowIndexColumn;
    private final List<Expression> unindexed;
    private transient java.util.Map<String, Object> vectors;

    Reader(byte[] encoded, Function1<PartitionedFile, Iterator<InternalRow>> plain,
           Function1<PartitionedFile, Iterator<InternalRow>> indexed, boolean columnar, boolean countable,
           int rowIndexColumn, List<Expression> unindexed) {
      this.encoded = encoded;
      this.plain = plain;
      this.indexed = indexed;
      this.columnar = columnar;
      this.countable = countable;
      this.rowIndexColumn = rowIndexColumn;
      this.unindexed = unindexed;
    }

    @Override
    @SuppressWarnings("unchecked")
    public Iterator<InternalRow> apply(PartitionedFile file) {
      if (vectors == null) {  // once per task: each task has its own copy of this reader
        vectors = DeletionVectors.decode(encoded);
      }
      Object vector = vectors.get(DeletionVectors.rowFileName(file.urlEncodedPath()));
      if (vector == null) {
        return plain.apply(file);
      }
      Iterator<Object> read;
      if (countable && file.start() == 0) {
        // The columnar reader hands out batches through an iterator typed as rows.
        read = new LiveBatches((Iterator<Object>) (Iterator<?>) plain.apply(file), vector, -1);
      } else if (columnar) {
        read = new LiveBatches((Iterator<Object>) (Iterator<?>) indexed.apply(file), vector, rowIndexColumn);
      } else {
        UnsafeProjection project = UnsafeProjection.create(CollectionConverters.asScala(unindexed).toList());
        int column = rowIndexColumn;
        return indexed.apply(file)
            .filter(row -> {
              if (row.isNullAt(column)) {
                throw DeletionVectors.missingPosition();
              }
              return !DeletionVectors.contains(vector, row.getLong(column));
            })
            .map(row -> (InternalRow) project.apply(row));
      }
      return (Iterator<InternalRow>) (Iterator<?>) read;
    }
  }

  /** The batches of one split with their deleted rows left out (and the row index column, if read). */
  private static final class LiveBatches extends AbstractIterator<Object> {
    private final Iterator<Object> batches;
    private final Object vector;
    private final int rowIndexColumn;  // -1: positions are counted
    private long base;
    private int[] rows = new int[0];

    LiveBatches(Iterator<Object> batches, Object vector, int rowIndexColumn) {
      this.batches = batches;
      this.vector = vector;
      this.rowIndexColumn = rowIndexColumn;
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
