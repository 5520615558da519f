package branchspark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.rdd.InputFileBlockHolder;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The deletion vectors of one read, and the per-row test both the UDF ({@link DeletedRow}) and the
 * compiled expression ({@link DeletedRowExpression}) run: is the row at this position of the Parquet
 * file the task is reading deleted?
 *
 * <p>The file is the scan's current input file (what input_file_name() reads), so no per-row file
 * column is needed. It is looked up in Spark's thread-local holder for every row, and its path string
 * (one object per file) compared by reference with the last file's. The holder object itself must not be
 * kept across rows: Spark replaces it whenever a scan partition ends (FileScanRDD unsets it), so a task
 * that reads more than one partition of files (a coalesce, as the change feed's comparison of small
 * inputs does) would go on testing later files' rows against an earlier file's vector (issue 67).
 *
 * <p>The vectors are one binary value, decoded on first use in each task (Spark gives every task its
 * own deserialized copy of this object): entries of [int name length][name, UTF-8: the
 * file's path below "_bs_seg="][byte kind][int length][payload], where kind 0 is a bitmap (bit p&7 of
 * byte p>>3) and kind 1 is sorted big-endian longs (for few deletions in a long file).
 */
public final class DeletionVectors implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final String SEGMENT_MARK = "_bs_seg=";
  private static final byte BITMAP = 0;
  private static final byte SORTED = 1;

  private final byte[] encoded;
  private transient Map<String, Object> vectors;
  private transient UTF8String currentFile;
  private transient Object currentVector;

  public DeletionVectors(byte[] encoded) {
    this.encoded = encoded;
  }

  public byte[] encoded() {
    return encoded;
  }

  /** True when a tombstone deletes the row at `position` of the file the task is reading. */
  public boolean isDeleted(long position) {
    if (InputFileBlockHolder.getInputFilePath() != currentFile) {
      nextFile();
    }
    return contains(currentVector, position);
  }

  /** True when `vector` (a file's entry of the decoded vectors, or null for none) deletes `position`. */
  static boolean contains(Object vector, long position) {
    if (vector == null) {
      return false;
    }
    if (vector instanceof byte[]) {
      byte[] bitmap = (byte[]) vector;
      long index = position >>> 3;
      return index < bitmap.length && ((bitmap[(int) index] >> (int) (position & 7)) & 1) != 0;
    }
    return Arrays.binarySearch((long[]) vector, position) >= 0;
  }

  private void nextFile() {
    if (vectors == null) {  // first row of the task
      vectors = decode(encoded);
    }
    UTF8String file = InputFileBlockHolder.getInputFilePath();
    currentVector = vectors.get(rowFileName(file.toString()));
    currentFile = file;
  }

  /** The error for a row without a position: the filter must not keep a row it cannot test. */
  public static IllegalStateException missingPosition() {
    return new IllegalStateException(
        "branchspark_deleted_row: the scan gave no row position; read the segment files with the row index");
  }

  static String rowFileName(String path) {
    int at = path.lastIndexOf(SEGMENT_MARK);
    if (at < 0) {
      // Not inside a file scan of a branchspark segment: refuse rather than keep rows silently.
      throw new IllegalStateException(
          "branchspark_deleted_row: the current input file '" + path + "' is not a branchspark segment file;"
              + " apply the filter directly on the segment scan");
    }
    return path.substring(at + SEGMENT_MARK.length());
  }

  static Map<String, Object> decode(byte[] encoded) {
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
