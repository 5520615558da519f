package branchspark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * branchspark_deleted_row(row_index, deletion_vectors) as a Java UDF: what a session without
 * branchspark's extension (a Spark Connect server started without it) registers. The compiled
 * expression, {@link DeletedRowExpression}, runs the same test without boxing each position.
 */
public final class DeletedRow implements UDF2<Long, byte[], Boolean> {
  // Per task: Spark deserializes a copy of the plan, and with it this object, for each task.
  private transient DeletionVectors vectors;

  @Override
  public Boolean call(Long rowIndex, byte[] encoded) {
    if (vectors == null || vectors.encoded() != encoded) {
      vectors = new DeletionVectors(encoded);
    }
    if (rowIndex == null) {
      throw DeletionVectors.missingPosition();
    }
    return vectors.isDeleted(rowIndex);
  }
}
