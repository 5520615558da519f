package branchspark;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.rdd.InputFileBlockHolder;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * branchspark_deleted_row(row_index, deletion_vectors): true when a tombstone deletes the row at
 * position row_index of the Parquet file the task is reading.
 *
 * <p>The file is the scan's current input file (what input_file_name() reads), so no per-row file
 * column is needed: the filter costs a position lookup per row. The vectors are one binary literal,
 * decoded once per task: entries of [int name length][name, UTF-8: the file's path below
 * "_bs_seg="][byte kind][int length][payload], where kind 0 is a bitmap (bit p&7 of byte p>>3) and
 * kind 1 is sorted big-endian longs (for few deletions in a long file).
 */
public final class DeletedRow implements UDF2<Long, byte[], Boolean> {
  private static final String SEGMENT_MARK = "_bs_seg=";
  private static final byte BITMAP = 0;
  private static final byte SORTED = 1;

  // Per task: Spark deserializes a copy of the plan, and with it this object, for each task.
  private transient byte[] decodedFrom;
  private transient Map<String, Object> vectors;
  private transient UTF8String currentFile;
  private transient Object currentVector;

  @Override
  public Boolean call(Long rowIndex, byte[] encoded) {
    if (encoded != decodedFrom) {
      vectors = decode(encoded);
      decodedFrom = encoded;
      currentFile = null;
    }
    UTF8String file = InputFileBlockHolder.getInputFilePath();
    if (file != currentFile) {  // the holder keeps one string per file: a reference check suffices
      currentVector = vectors.get(rowFileName(file.toString()));
      currentFile = file;
    }
    if (rowIndex == null) {
      throw new IllegalStateException(
          "branchspark_deleted_row: the scan gave no row position; read the segment files with the row index");
    }
    return currentVector != null && isSet(currentVector, rowIndex);
  }

  private static boolean isSet(Object vector, long position) {
    if (vector instanceof byte[]) {
      byte[] bitmap = (byte[]) vector;
      long index = position >>> 3;
      return index < bitmap.length && ((bitmap[(int) index] >> (int) (position & 7)) & 1) != 0;
    }
    return Arrays.binarySearch((long[]) vector, position) >= 0;
  }

  private static String rowFileName(String path) {
    int at = path.lastIndexOf(SEGMENT_MARK);
    if (at < 0) {
      // Not inside a file scan of a branchspark segment: refuse rather than keep rows silently.
      throw new IllegalStateException(
          "branchspark_deleted_row: the current input file '" + path + "' is not a branchspark segment file;"
              + " apply the filter directly on the segment scan");
    }
    return path.substring(at + SEGMENT_MARK.length());
  }

  private static Map<String, Object> decode(byte[] encoded) {
    Map<String, Object> result = new HashMap<>();
    ByteBuffer buffer = ByteBuffer.wrap(encoded);
    while (buffer.hasRemaining()) {
      byte[] name = new byte[buffer.getInt()];
      buffer.get(name);
      byte kind = buffer.get();
      int length = buffer.getInt();
      Object vector;
      if (kind == BITMAP) {
        byte[] bitmap = new byte[length];
        buffer.get(bitmap);
        vector = bitmap;
      } else if (kind == SORTED) {
        long[] positions = new long[length / 8];
        buffer.asLongBuffer().get(positions);
        buffer.position(buffer.position() + length);
        vector = positions;
      } else {
        throw new IllegalArgumentException("branchspark_deleted_row: unknown vector kind " + kind);
      }
      result.put(new String(name, StandardCharsets.UTF_8), vector);
    }
    return result;
  }
}
