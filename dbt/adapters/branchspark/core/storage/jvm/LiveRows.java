package branchspark;

import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DayTimeIntervalType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.types.YearMonthIntervalType;
import org.apache.spark.sql.vectorized.ColumnVector;

/**
 * Leaves a batch's deleted rows out in place: the live rows move down over them in the vectors Spark's
 * Parquet reader filled (which it refills for its next batch), and the batch keeps its vector classes.
 * The scan's generated code then reads the batch exactly as it reads a plain one: no filter, no view
 * between it and the values. A dictionary-encoded vector moves its dictionary ids, not decoded values;
 * strings and binaries move their (offset, length) pairs, not their bytes.
 */
final class LiveRows {
  private LiveRows() {
  }

  /** True for the column types {@link #keep} moves: flat types with one value slot per row. */
  static boolean supports(DataType type) {
    return type instanceof BooleanType || type instanceof ByteType || type instanceof ShortType
        || type instanceof IntegerType || type instanceof DateType || type instanceof YearMonthIntervalType
        || type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType
        || type instanceof DayTimeIntervalType || type instanceof FloatType || type instanceof DoubleType
        || type instanceof DecimalType || type instanceof StringType || type instanceof BinaryType;
  }

  /**
   * Row rows[k] of `column` becomes row k, for k from `from` (the first row that moves) to `live`.
   * `rows` ascends, so rows[k] >= k and a row is read before anything is written over it.
   * Vectors that are not the reader's own (a partition value's constant vector) stay as they are.
   */
  static void keep(ColumnVector column, DataType type, int[] rows, int from, int live) {
    if (!(column instanceof WritableColumnVector)) {
      return;
    }
    WritableColumnVector vector = (WritableColumnVector) column;
    if (vector.hasNull()) {
      for (int k = from; k < live; k++) {
        if (vector.isNullAt(rows[k])) {
          vector.putNull(k);
        } else {
          vector.putNotNull(k);
        }
      }
    }
    if (vector.hasDictionary()) {
      WritableColumnVector ids = vector.getDictionaryIds();
      for (int k = from; k < live; k++) {
        ids.putInt(k, ids.getInt(rows[k]));
      }
      return;
    }
    if (type instanceof IntegerType || type instanceof DateType || type instanceof YearMonthIntervalType
        || (type instanceof DecimalType && DecimalType.is32BitDecimalType(type))) {
      for (int k = from; k < live; k++) {
        vector.putInt(k, vector.getInt(rows[k]));
      }
    } else if (type instanceof LongType || type instanceof TimestampType || type instanceof TimestampNTZType
        || type instanceof DayTimeIntervalType || (type instanceof DecimalType && DecimalType.is64BitDecimalType(type))) {
      for (int k = from; k < live; k++) {
        vector.putLong(k, vector.getLong(rows[k]));
      }
    } else if (type instanceof DoubleType) {
      for (int k = from; k < live; k++) {
        vector.putDouble(k, vector.getDouble(rows[k]));
      }
    } else if (type instanceof FloatType) {
      for (int k = from; k < live; k++) {
        vector.putFloat(k, vector.getFloat(rows[k]));
      }
    } else if (type instanceof StringType || type instanceof BinaryType || type instanceof DecimalType) {
      for (int k = from; k < live; k++) {  // wide decimals are stored as byte arrays too
        vector.putArray(k, vector.getArrayOffset(rows[k]), vector.getArrayLength(rows[k]));
      }
    } else if (type instanceof BooleanType) {
      for (int k = from; k < live; k++) {
        vector.putBoolean(k, vector.getBoolean(rows[k]));
      }
    } else if (type instanceof ByteType) {
      for (int k = from; k < live; k++) {
        vector.putByte(k, vector.getByte(rows[k]));
      }
    } else if (type instanceof ShortType) {
      for (int k = from; k < live; k++) {
        vector.putShort(k, vector.getShort(rows[k]));
      }
    } else {
      throw new IllegalStateException("branchspark: cannot leave deleted rows out of a column of type " + type);
    }
  }
}
