package branchspark;

import software.amazon.awssdk.core.SdkRequest;
import software.amazon.awssdk.core.SdkResponse;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadRequest;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;

/**
 * fs.s3a.audit.execution.interceptors=branchspark.UploadEtags: hands the ETag the store answers an upload with
 * (a PUT, or the completion of a multipart upload) to {@link KnownFileStatus}, which keeps it for a direct commit's
 * own files only. The commit records it in the catalog beside the file's size, so that a later read opens the file
 * with its ETag and S3A's analytics stream sends no HEAD for it: learned from the write's own answer, at no
 * request's cost.
 */
public class UploadEtags implements ExecutionInterceptor {
  @Override
  public void afterExecution(Context.AfterExecution context, ExecutionAttributes attributes) {
    SdkRequest request = context.request();
    SdkResponse response = context.response();
    if (request instanceof PutObjectRequest && response instanceof PutObjectResponse) {
      PutObjectRequest put = (PutObjectRequest) request;
      KnownFileStatus.uploaded("s3a://" + put.bucket() + "/" + put.key(), ((PutObjectResponse) response).eTag());
    } else if (request instanceof CompleteMultipartUploadRequest && response instanceof CompleteMultipartUploadResponse) {
      CompleteMultipartUploadRequest done = (CompleteMultipartUploadRequest) request;
      KnownFileStatus.uploaded("s3a://" + done.bucket() + "/" + done.key(),
          ((CompleteMultipartUploadResponse) response).eTag());
    }
  }
}
