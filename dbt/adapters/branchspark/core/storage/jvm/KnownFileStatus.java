package branchspark;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;

import scala.Function1;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;

/**
 * The file a scan's task is opening, with the size and time its listing or the catalog gave: a file system that
 * would look the file up to open it (S3A: a HEAD) can answer from here instead ({@code s3a/KnownStatusS3AFileSystem}).
 * Spark's Parquet reader opens each file by path and asks for its status first, although the scan already
 * knows both; set for one thread while a reader opens one file and reads its footer, then cleared.
 */
public final class KnownFileStatus {
  /** {path as the scan names it, length, modification time} of the file this thread is opening, or null. */
  private static final ThreadLocal<Object[]> OPENING = new ThreadLocal<>();
  /** Files a direct commit is writing (DirectCommitProtocol), until their stream is opened. */
  private static final Set<String> DIRECT = ConcurrentHashMap.newKeySet();
  /** path -> {length, time} of a file a direct commit wrote, from its stream as it closed, until committed. */
  private static final Map<String, long[]> WRITTEN = new ConcurrentHashMap<>();
  /** Files of a direct commit whose upload is under way: the store's answer names their ETag. */
  private static final Set<String> UPLOADING = ConcurrentHashMap.newKeySet();
  /** path -> ETag the store gave a direct commit's file as its upload completed, until committed. */
  private static final Map<String, String> WRITTEN_ETAGS = new ConcurrentHashMap<>();
  /** Folders a branchspark write is about to create under a new, unique name: none exists there yet. */
  private static final Set<String> NEW_FOLDERS = ConcurrentHashMap.newKeySet();

  private KnownFileStatus() {
  }

  /** The length and modification time of {@code path} if this thread is opening it now, or a direct commit
   * wrote it and has not committed it yet; else null. */
  public static long[] of(Path path) {
    Object[] opening = OPENING.get();
    if (opening != null && opening[0].equals(path.toString())) {
      return new long[] {(Long) opening[1], (Long) opening[2]};
    }
    return WRITTEN.get(path.toString());
  }

  /** The ETag of {@code path} if this thread is opening it now with one the catalog recorded, or the store gave
   * it to a direct commit that has not committed it yet; else null. */
  public static String etagOf(Path path) {
    Object[] opening = OPENING.get();
    if (opening != null && opening[0].equals(path.toString())) {
      return (String) opening[3];
    }
    return WRITTEN_ETAGS.get(path.toString());
  }

  /** A direct commit will write {@code path} (a file system that can count what it writes may say so). */
  public static void writing(Path path) {
    DIRECT.add(path.toString());
  }

  /** Whether {@code path} is a file a direct commit writes (asked once, as its stream is created). */
  public static boolean takeWriting(Path path) {
    if (!DIRECT.remove(path.toString())) {
      return false;
    }
    UPLOADING.add(path.toString());
    return true;
  }

  /** The store completed the upload of {@code uri} ({@code s3a://bucket/key}) with this ETag: kept when it is a
   * direct commit's file (an S3 client's interceptor says so, {@code s3a/UploadEtags}). */
  public static void uploaded(String uri, String etag) {
    if (etag != null && UPLOADING.contains(uri)) {
      WRITTEN_ETAGS.put(uri, etag);
    }
  }

  /** The stream of a direct commit's file closed after {@code length} bytes. */
  public static void wrote(Path path, long length) {
    WRITTEN.put(path.toString(), new long[] {length, System.currentTimeMillis()});
    UPLOADING.remove(path.toString());
  }

  /** Forget what was recorded of a direct commit's file (its task committed or aborted). */
  public static void forget(Path path) {
    DIRECT.remove(path.toString());
    UPLOADING.remove(path.toString());
    WRITTEN.remove(path.toString());
    WRITTEN_ETAGS.remove(path.toString());
  }

  /** The writer of a new folder (a unique name) says so before Spark checks whether it exists. */
  public static void expectNewFolder(String uri) {
    NEW_FOLDERS.add(uri);
  }

  /** Whether {@code path} is a new folder announced by its writer (asked once). */
  public static boolean takeNewFolder(Path path) {
    return NEW_FOLDERS.remove(path.toString());
  }

  /** {@code reader} with each file's status known while it opens the file; {@code etags}: path -> the ETag the
   * catalog recorded for it (a file without one is opened with its size alone). */
  public static Function1<PartitionedFile, Iterator<InternalRow>> opening(
      Function1<PartitionedFile, Iterator<InternalRow>> reader, java.util.HashMap<String, String> etags) {
    return new Opening(reader, etags);
  }

  private static final class Opening extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>>
      implements java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private final Function1<PartitionedFile, Iterator<InternalRow>> reader;
    private final java.util.HashMap<String, String> etags;

    Opening(Function1<PartitionedFile, Iterator<InternalRow>> reader, java.util.HashMap<String, String> etags) {
      this.reader = reader;
      this.etags = etags;
    }

    @Override
    public Iterator<InternalRow> apply(PartitionedFile file) {
      String path = file.toPath().toString();
      OPENING.set(new Object[] {path, file.fileSize(), file.modificationTime(), etags.get(path)});
      try {
        return reader.apply(file);  // opens the file and reads its footer now; the rows stream later
      } finally {
        OPENING.remove();
      }
    }
  }
}
