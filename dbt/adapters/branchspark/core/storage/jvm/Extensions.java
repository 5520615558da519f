package branchspark;

import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;

import scala.Function1;
import scala.Tuple3;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * spark.sql.extensions=branchspark.Extensions: registers branchspark_deleted_row and branchspark_deleted_key
 * as the compiled expressions {@link DeletedRowExpression} and {@link DeletedKeyExpression} in every
 * session of the application.
 */
public final class Extensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    Function1<Seq<Expression>, Expression> builder = new AbstractFunction1<Seq<Expression>, Expression>() {
      @Override
      public Expression apply(Seq<Expression> arguments) {
        return DeletedRowExpression.build(arguments);
      }
    };
    extensions.injectFunction(new Tuple3<>(FunctionIdentifier.apply(DeletedRowExpression.NAME),
        new ExpressionInfo(DeletedRowExpression.class.getName(), DeletedRowExpression.NAME), builder));
    Function1<Seq<Expression>, Expression> keys = new AbstractFunction1<Seq<Expression>, Expression>() {
      @Override
      public Expression apply(Seq<Expression> arguments) {
        return DeletedKeyExpression.build(arguments);
      }
    };
    extensions.injectFunction(new Tuple3<>(FunctionIdentifier.apply(DeletedKeyExpression.NAME),
        new ExpressionInfo(DeletedKeyExpression.class.getName(), DeletedKeyExpression.NAME), keys));
    return BoxedUnit.UNIT;
  }
}
