package branchspark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionPath;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.SchemaRelationProvider;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.DataTypes;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A Parquet read of files the catalog names, with the sizes it recorded: no request reaches the store
 * before a file is opened (Spark's own Parquet source checks that each path exists, lists it and, with
 * a basePath, looks that folder up: on S3 two or three HEADs and a LIST per file). Options:
 * {@value #FILES_OPTION}: one file a line, {@code size TAB uri}, or {@code size TAB uri TAB etag} where the catalog
 * recorded the file's ETag (S3A then opens it with no lookup at all); {@code basePath} (optional, as Spark's
 * source takes it): the folder whose {@code name=value} subfolders give the partition columns named in the
 * schema; {@value #CONSTANTS_OPTION} (optional): one column a line, {@code name TAB value}, a column of the
 * schema that holds that value (cast from text as the schema types it) on every row. Such columns are
 * partition values, as Delta's change data feed gives each commit's version: no projection to analyze, and
 * nothing in the code Spark generates, so a value new with each commit compiles no class of its own. Reads as
 * {@link SegmentParquetFormat} where its deletion-vector option or an ETag is given, else as Spark's source.
 */
public class KnownFiles implements SchemaRelationProvider {
  public static final String FILES_OPTION = "branchspark.files";
  public static final String CONSTANTS_OPTION = "branchspark.constants";
  private static final String NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__";

  @Override
  public BaseRelation createRelation(SQLContext sqlContext, scala.collection.immutable.Map<String, String> parameters,
      StructType schema) {
    SparkSession session = sqlContext.sparkSession();
    Map<String, String> options = new HashMap<>(CollectionConverters.asJava(parameters));
    String listed = options.remove(FILES_OPTION);
    Map<String, String> constants = constants(options.remove(CONSTANTS_OPTION), schema);
    String base = null;
    for (String key : new ArrayList<>(options.keySet())) {
      if (key.equalsIgnoreCase("basePath")) {  // as Spark's Parquet source names it; no lookup of it here
        base = options.remove(key);
      }
    }
    if (listed == null) {
      throw new IllegalArgumentException("branchspark: option " + FILES_OPTION + " names no files");
    }
    Configuration conf = session.sessionState().newHadoopConfWithOptions(parameters);
    Map<Path, FileStatus[]> known = new LinkedHashMap<>();
    java.util.HashMap<String, String> etags = new java.util.HashMap<>();
    List<Path> roots = new ArrayList<>();
    FileSystem fs = null;
    for (String line : listed.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] fields = line.split("\t", -1);
      Path path = new Path(fields[1]);
      try {
        if (fs == null) {
          fs = path.getFileSystem(conf);
        }
      } catch (java.io.IOException e) {
        throw new RuntimeException(e);
      }
      path = fs.makeQualified(path);
      long size = Long.parseLong(fields[0]);
      if (fields.length > 2 && !fields[2].isEmpty()) {
        etags.put(path.toString(), fields[2]);
      }
      // Length and path are what a read needs (the footer is at the end); the rest is unknown, as 0.
      known.put(path, new FileStatus[] {new FileStatus(size, false, 1, 0, 0, path)});
      roots.add(path);
    }
    PartitionSpec spec = partitions(roots, base == null || fs == null ? null : fs.makeQualified(new Path(base)),
        schema, constants, session.sessionState().conf().sessionLocalTimeZone());
    java.util.Set<String> partitionNames = new java.util.HashSet<>(
        java.util.Arrays.asList(spec.partitionColumns().fieldNames()));
    List<StructField> data = new ArrayList<>();
    for (StructField field : schema.fields()) {
      if (!partitionNames.contains(field.name())) {
        data.add(field);
      }
    }
    scala.collection.immutable.Map<String, String> kept = scala.collection.immutable.Map.from(
        CollectionConverters.asScala(options));
    InMemoryFileIndex index = new InMemoryFileIndex(session, CollectionConverters.asScala(roots).toList(), kept,
        Option.apply(schema), new Known(known), Option.apply(spec), Option.empty());
    // Deletion vectors and ETags need our Parquet source; without them Spark's own reads the files (its plans
    // name it as the paths' reads do, and it reads every column type in batches).
    ParquetFileFormat format = options.containsKey(SegmentParquetFormat.VECTORS_OPTION) || !etags.isEmpty()
        ? new SegmentParquetFormat(etags) : new ParquetFileFormat();
    return new HadoopFsRelation(index, spec.partitionColumns(), new StructType(data.toArray(new StructField[0])),
        Option.empty(), format, kept, session);
  }

  /** {column: value} of the constants option's lines, each naming a column of `schema`. */
  private static Map<String, String> constants(String listed, StructType schema) {
    Map<String, String> values = new LinkedHashMap<>();
    if (listed == null) {
      return values;
    }
    for (String line : listed.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] fields = line.split("\t", 2);
      if (fields.length != 2 || schema.getFieldIndex(fields[0]).isEmpty()) {
        throw new IllegalArgumentException("branchspark: option " + CONSTANTS_OPTION + " names no column of the "
            + "schema in line: " + line);
      }
      values.put(fields[0], fields[1]);
    }
    return values;
  }

  /** The partitions of `files`: the `name=value` folders between `base` and each file, for the columns of
   * `schema` they name, then `constants` (the same for every file), typed as the schema says (no listing, no
   * inference). */
  private static PartitionSpec partitions(List<Path> files, Path base, StructType schema,
      Map<String, String> constants, String timeZone) {
    List<StructField> columns = new ArrayList<>();
    Map<Path, Map<String, String>> byDir = new LinkedHashMap<>();
    String prefix = base == null ? null : base.toString() + "/";
    for (Path file : files) {
      Path dir = file.getParent();
      if (byDir.containsKey(dir)) {
        continue;
      }
      Map<String, String> values = new LinkedHashMap<>();
      String text = dir.toString();
      if (prefix != null && text.startsWith(prefix)) {
        for (String part : text.substring(prefix.length()).split("/")) {
          int eq = part.indexOf('=');
          if (eq <= 0) {
            continue;
          }
          String name = ExternalCatalogUtils.unescapePathName(part.substring(0, eq));
          String value = ExternalCatalogUtils.unescapePathName(part.substring(eq + 1));
          if (schema.getFieldIndex(name).isEmpty()) {
            continue;
          }
          values.put(name, NULL_PARTITION.equals(value) ? null : value);
          if (columns.stream().noneMatch(c -> c.name().equals(name))) {
            columns.add(schema.apply(name));
          }
        }
      }
      byDir.put(dir, values);
    }
    for (Map.Entry<String, String> constant : constants.entrySet()) {
      for (Map<String, String> values : byDir.values()) {
        values.put(constant.getKey(), constant.getValue());
      }
      if (columns.stream().noneMatch(c -> c.name().equals(constant.getKey()))) {
        columns.add(schema.apply(constant.getKey()));
      }
    }
    StructType partitionSchema = new StructType(columns.toArray(new StructField[0]));
    List<PartitionPath> paths = new ArrayList<>();
    for (Map.Entry<Path, Map<String, String>> entry : byDir.entrySet()) {
      Object[] row = new Object[columns.size()];
      for (int i = 0; i < columns.size(); i++) {
        String value = entry.getValue().get(columns.get(i).name());
        row[i] = value == null ? null : new Cast(Literal.create(value, DataTypes.StringType),
            columns.get(i).dataType(), Option.apply(timeZone)).eval(InternalRow.empty());
      }
      paths.add(new PartitionPath(new GenericInternalRow(row), entry.getKey()));
    }
    return new PartitionSpec(partitionSchema, CollectionConverters.asScala(paths).toList());
  }

  /** The file index's cache, answering each file the catalog named with its own status: nothing is listed. */
  private static final class Known extends FileStatusCache {
    private final Map<Path, FileStatus[]> files;

    Known(Map<Path, FileStatus[]> files) {
      this.files = files;
    }

    @Override
    public Option<FileStatus[]> getLeafFiles(Path path) {
      return Option.apply(files.get(path));
    }

    @Override
    public void putLeafFiles(Path path, FileStatus[] leafFiles) {
    }

    @Override
    public void invalidateAll() {
    }
  }
}
