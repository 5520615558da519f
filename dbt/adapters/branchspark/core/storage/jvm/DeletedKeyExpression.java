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
 * branchspark_deleted_key(key, row_sequence, deleted_keys): whether a keyed table's tombstones delete a
 * row (a tombstone with its key, newer than the row). The keys (a constant, {@link DeletedKeys}) are
 * held by the expression; its generated code probes them with the key as a primitive long and computes
 * the row's sequence only for a key some tombstone names, so a scan pays one probe per row and no join.
 * Registered by {@link Extensions}.
 */
public final class DeletedKeyExpression extends Expression implements Serializable {
  private static final long serialVersionUID = 1L;
  public static final String NAME = "branchspark_deleted_key";

  private final Expression key;
  private final Expression sequence;
  private final byte[] keys;
  private final Seq<Expression> children;
  private transient DeletedKeys interpreted;
  // The keys' hash: they can be megabytes, and the optimizer hashes each copy of this expression (its
  // canonical forms, its constraints) many times, so it is computed once and handed to every copy.
  private final int keysHash;

  public DeletedKeyExpression(Expression key, Expression sequence, byte[] keys) {
    this(key, sequence, keys, Arrays.hashCode(keys));
  }

  private DeletedKeyExpression(Expression key, Expression sequence, byte[] keys, int keysHash) {
    this.key = key;
    this.sequence = sequence;
    this.keys = keys;
    this.keysHash = keysHash;
    this.children = CollectionConverters.asScala(List.of(key, sequence)).toList();
  }

  /** The function's builder: a BIGINT key, a BIGINT row sequence and a constant binary of deleted keys. */
  public static Expression build(Seq<Expression> arguments) {
    if (arguments.size() != 3 || !arguments.apply(2).foldable()
        || !DataTypes.BinaryType.equals(arguments.apply(2).dataType())
        || !DataTypes.LongType.equals(arguments.apply(0).dataType())
        || !DataTypes.LongType.equals(arguments.apply(1).dataType())) {
      throw new IllegalArgumentException(
          NAME + " takes (BIGINT key, BIGINT row sequence, constant binary deleted keys); got " + arguments.size()
              + " arguments");
    }
    Object value = arguments.apply(2).eval(null);
    return new DeletedKeyExpression(arguments.apply(0), arguments.apply(1),
        value == null ? new byte[0] : (byte[]) value);
  }

  @Override
  public Seq<Expression> children() {
    return children;
  }

  @Override
  public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
    return new DeletedKeyExpression(newChildren.apply(0), newChildren.apply(1), keys, keysHash);
  }

  @Override
  public DataType dataType() {
    return DataTypes.BooleanType;
  }

  @Override
  public boolean nullable() {
    return false;  // a NULL key or sequence is no deleted row: a primary key is never NULL
  }

  @Override
  public Object eval(InternalRow row) {
    Object value = key.eval(row);
    if (value == null) {
      return false;
    }
    if (interpreted == null) {
      interpreted = new DeletedKeys(keys);
    }
    long newest = interpreted.newestTombstone((Long) value);
    if (newest == DeletedKeys.NONE) {
      return false;
    }
    Object written = sequence.eval(row);
    return written != null && (Long) written < newest;
  }

  @Override
  public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
    ExprCode keyCode = key.genCode(ctx);
    ExprCode sequenceCode = sequence.genCode(ctx);
    // Serialized with the generated code's references: each task decodes its own copy once.
    String state = ctx.addReferenceObj("deletedKeys", new DeletedKeys(keys), DeletedKeys.class.getName());
    String newest = ctx.freshName("newestTombstone");
    // The sequence's code runs only for a key a tombstone names (about as many rows as were deleted).
    String head = "\nboolean " + ev.value() + " = false;\nif (!" + keyCode.isNull() + ") {\n  long " + newest + " = "
        + state + ".newestTombstone(" + keyCode.value() + ");\n  if (" + newest + " != "
        + DeletedKeys.class.getName() + ".NONE) {\n";
    String tail = "\n    " + ev.value() + " = !" + sequenceCode.isNull() + " && " + sequenceCode.value() + " < "
        + newest + ";\n  }\n}\n";
    List<String> parts = Arrays.asList("", head, tail);
    List<JavaCode> inputs = Arrays.asList(keyCode.code(), sequenceCode.code());
    return ev.copy(new CodeBlock(CollectionConverters.asScala(parts).toList(), CollectionConverters.asScala(inputs).toList()),
        FalseLiteral$.MODULE$, ev.value());
  }

  @Override
  public String prettyName() {
    return NAME;
  }

  @Override
  public String toString() {  // not the keys' bytes: they can be megabytes
    return NAME + "(" + key + ", " + sequence + ", <" + keys.length + " bytes of deleted keys>)";
  }

  @Override
  public String sql() {
    return NAME + "(" + key.sql() + ", " + sequence.sql() + ", <" + keys.length + " bytes of deleted keys>)";
  }

  @Override
  public int productArity() {
    return 3;
  }

  @Override
  public Object productElement(int n) {
    if (n == 0) {
      return key;
    }
    if (n == 1) {
      return sequence;
    }
    if (n == 2) {
      return keys;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }

  @Override
  public boolean canEqual(Object other) {
    return other instanceof DeletedKeyExpression;
  }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof DeletedKeyExpression)) {
      return false;
    }
    DeletedKeyExpression that = (DeletedKeyExpression) other;
    return keysHash == that.keysHash && key.equals(that.key) && sequence.equals(that.sequence)
        && Arrays.equals(keys, that.keys);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * key.hashCode() + sequence.hashCode()) + keysHash;
  }
}
