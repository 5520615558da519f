package branchspark;

import java.io.IOException;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.fs.s3a.S3AFileStatus;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import org.apache.hadoop.util.Progressable;

/**
 * fs.s3a.impl=branchspark.KnownStatusS3AFileSystem: S3A, minus the lookups of what branchspark already knows
 * ({@link KnownFileStatus}): a file a scan opens with the size the catalog recorded (a HEAD each), a file a direct
 * commit just wrote (its size counted as it was written: the HEADs of Spark's write statistics and of the commit),
 * and the new, uniquely named folder a write goes to (the HEAD and LIST of Spark's existence check). A status
 * answered so carries the file's ETag where the catalog recorded it (or the store just gave it): S3A's analytics
 * stream then opens the file without the HEAD it sends for its own metadata. Everything
 * else, and every other write (the committers included), is S3A's own.
 */
public class KnownStatusS3AFileSystem extends S3AFileSystem {
  @Override
  public FileStatus getFileStatus(Path path) throws IOException {
    long[] known = KnownFileStatus.of(path);
    if (known == null) {
      return super.getFileStatus(path);
    }
    return new S3AFileStatus(known[0], known[1], makeQualified(path), getDefaultBlockSize(path), getUsername(),
        KnownFileStatus.etagOf(path), null);
  }

  @Override
  public boolean exists(Path path) throws IOException {
    return !KnownFileStatus.takeNewFolder(path) && super.exists(path);
  }

  @Override
  public FSDataOutputStream create(Path path, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    FSDataOutputStream out = super.create(path, permission, overwrite, bufferSize, replication, blockSize, progress);
    if (!KnownFileStatus.takeWriting(path)) {
      return out;
    }
    return new FSDataOutputStream(out, null) {  // counts the bytes; S3A's stream does the writing
      @Override
      public void close() throws IOException {
        super.close();
        KnownFileStatus.wrote(path, getPos());
      }
    };
  }
}
