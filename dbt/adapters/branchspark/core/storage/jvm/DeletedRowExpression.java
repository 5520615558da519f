package branchspark;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.FalseLiteral$;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * branchspark_deleted_row(row_index, deletion_vectors) as a Catalyst expression: the vectors (a
 * constant) are held by the expression and its generated code tests the position as a primitive
 * long, inside Spark's whole-stage code, instead of through a UDF call that boxes it per row.
 * Registered by {@link Extensions}; the same test as {@link DeletedRow}.
 */
public final class DeletedRowExpression extends Expression implements Serializable {
  private static final long serialVersionUID = 1L;
  public static final String NAME = "branchspark_deleted_row";

  private final Expression position;
  private final byte[] vectors;
  private final Seq<Expression> children;
  private transient DeletionVectors interpreted;
  // The vectors' hash, computed once and handed to every copy: the optimizer hashes each copy of this expression
  // (its canonical forms, its constraints) many times, and the vectors can be megabytes.
  private final int vectorsHash;

  public DeletedRowExpression(Expression position, byte[] vectors) {
    this(position, vectors, Arrays.hashCode(vectors));
  }

  private DeletedRowExpression(Expression position, byte[] vectors, int vectorsHash) {
    this.position = position;
    this.vectors = vectors;
    this.vectorsHash = vectorsHash;
    this.children = CollectionConverters.asScala(List.of(position)).toList();
  }

  /** The function's builder: a position expression and a constant binary of vectors. */
  public static Expression build(Seq<Expression> arguments) {
    if (arguments.size() != 2 || !arguments.apply(1).foldable()
        || !DataTypes.BinaryType.equals(arguments.apply(1).dataType())) {
      throw new IllegalArgumentException(
          NAME + " takes (row position, constant binary deletion vectors); got " + arguments.size() + " arguments");
    }
    Object value = arguments.apply(1).eval(null);
    return new DeletedRowExpression(arguments.apply(0), value == null ? new byte[0] : (byte[]) value);
  }

  @Override
  public Seq<Expression> children() {
    return children;
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
    return new DeletedRowExpression(newChildren.apply(0), vectors, vectorsHash);
  }

  @Override
  public DataType dataType() {
    return DataTypes.BooleanType;
  }

  /**
   * Not deterministic: the answer depends on the file the task is reading, not on the position alone.
   * Declared so, Catalyst never infers this filter onto the other side of a join on the position
   * (a tombstone scan, where there is no segment file to test against).
   */
  @Override
  public boolean deterministic() {
    return false;
  }

  @Override
  public boolean nullable() {
    return false;  // a missing position is an error, not an unknown
  }

  @Override
  public Object eval(InternalRow row) {
    Object value = position.eval(row);
    if (value == null) {
      throw DeletionVectors.missingPosition();
    }
    if (interpreted == null) {
      interpreted = new DeletionVectors(vectors);
    }
    return interpreted.isDeleted((Long) value);
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    ExprCode input = position.genCode(ctx);
    // Serialized with the generated code's references: each task decodes its own copy once.
    String state = ctx.addReferenceObj("deletionVectors", new DeletionVectors(vectors), DeletionVectors.class.getName());
    String test = "\nif (" + input.isNull() + ") {\n  throw " + DeletionVectors.class.getName() + ".missingPosition();\n}\n"
        + "boolean " + ev.value() + " = " + state + ".isDeleted(" + input.value() + ");\n";
    List<String> parts = Arrays.asList("", test);
    List<JavaCode> inputs = Arrays.asList(input.code());
    return ev.copy(new CodeBlock(CollectionConverters.asScala(parts).toList(), CollectionConverters.asScala(inputs).toList()),
        FalseLiteral$.MODULE$, ev.value());
  }

  @Override
  public String prettyName() {
    return NAME;
  }

  @Override
  public String toString() {  // not the vectors' bytes: they can be megabytes
    return NAME + "(" + position + ", <" + vectors.length + " bytes of deletion vectors>)";
  }

  @Override
  public String sql() {
    return NAME + "(" + position.sql() + ", <" + vectors.length + " bytes of deletion vectors>)";
  }

  @Override
  public int productArity() {
    return 2;
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) {
      return position;
    }
    if (n == 1) {
      return vectors;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof DeletedRowExpression;
  }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof DeletedRowExpression)) {
      return false;
    }
    DeletedRowExpression that = (DeletedRowExpression) other;
    return vectorsHash == that.vectorsHash && position.equals(that.position) && Arrays.equals(vectors, that.vectors);
  }

  @Override
  public int hashCode() {
    return 31 * position.hashCode() + vectorsHash;
  }
}
