package branchspark;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.internal.io.FileCommitProtocol;
import org.apache.spark.internal.io.FileNameSpec;
import org.apache.spark.sql.internal.SQLConf;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's commit protocol for branchspark's own writes: each task writes its files straight to their final,
 * unique names, and the job's commit hands the committed files (with their sizes) to the caller instead of
 * making them visible by a rename, a listing or a marker. The catalog commit that follows is what makes them
 * part of a table (SPEC 8: readers open only files the catalog names), so a file of a failed or duplicate task
 * attempt is never named and {@code gc} removes it.
 *
 * <p>On object storage this is what a small commit needs: a PUT per file and the lookup of its size, where
 * Hadoop's committers add a temporary folder, its listing and a rename (a copy) per file, or S3A's magic
 * committer about forty requests of bookkeeping per write (docs/deploy.md, "Requests").
 *
 * <p>A write is branchspark's when its options carry {@value #WRITE_OPTION} (an id the caller picks; the
 * options reach the job's Hadoop configuration). Every other write of the session, a user's own included,
 * goes to the protocol named by {@value #FALLBACK_CONF} (Spark's default when unset), unchanged.
 * {@value #REDIRECT_OPTION} (optional): lines {@code partitionDir TAB folderUri}: files Spark would write
 * under that partition folder are written in that folder instead (a difference's two sides, each where a
 * tombstone or a segment lives, with no move afterwards).
 */
public class DirectCommitProtocol extends FileCommitProtocol implements Serializable {
  public static final String WRITE_OPTION = "branchspark.write";
  public static final String REDIRECT_OPTION = "branchspark.write.redirect";
  public static final String FALLBACK_CONF = "spark.branchspark.commitProtocol.fallback";
  private static final String SPARK_DEFAULT =
      "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol";
  // write id -> "partitionDir TAB name TAB bytes [TAB etag]" of every committed file, until the caller takes them
  private static final Map<String, List<String>> COMMITTED = new ConcurrentHashMap<>();

  private final String jobId;
  private final String path;
  private final FileCommitProtocol fallback;
  private String writeId;  // set by setupJob on the driver, before the protocol is sent to the tasks
  private HashMap<String, String> redirects;
  private transient ArrayList<String[]> written;  // a task's files: {partitionDir, name, uri}

  public DirectCommitProtocol(String jobId, String path, boolean dynamicPartitionOverwrite) {
    this.jobId = jobId;
    this.path = path;
    String fallbackClass = SQLConf.get().getConfString(FALLBACK_CONF, SPARK_DEFAULT);
    this.fallback = FileCommitProtocol.instantiate(fallbackClass, jobId, path, dynamicPartitionOverwrite);
  }

  /** The files a finished write committed, each {@code partitionDir TAB name TAB bytes}, then {@code TAB etag}
   * where the store gave the file one; null when the write
   * with this id did not go through this protocol (or was taken already). */
  public static String[] take(String writeId) {
    List<String> files = COMMITTED.remove(writeId);
    return files == null ? null : files.toArray(new String[0]);
  }

  private boolean direct() {
    return writeId != null;
  }

  @Override
  public void setupJob(JobContext job) {
    Configuration conf = job.getConfiguration();
    String id = conf.get(WRITE_OPTION);
    if (id == null || path == null) {
      fallback.setupJob(job);
      return;
    }
    writeId = id;
    redirects = new HashMap<>();
    String listed = conf.get(REDIRECT_OPTION, "");
    for (String line : listed.split("\n")) {
      int tab = line.indexOf('\t');
      if (tab > 0) {
        redirects.put(line.substring(0, tab), line.substring(tab + 1));
      }
    }
  }

  @Override
  public void commitJob(JobContext job, scala.collection.immutable.Seq<TaskCommitMessage> commits) {
    if (!direct()) {
      fallback.commitJob(job, commits);
      return;
    }
    List<String> files = new ArrayList<>();
    for (TaskCommitMessage message : CollectionConverters.asJava(commits)) {
      @SuppressWarnings("unchecked")
      List<String> of = (List<String>) message.obj();
      files.addAll(of);
    }
    COMMITTED.put(writeId, files);
  }

  @Override
  public void abortJob(JobContext job) {
    if (!direct()) {
      fallback.abortJob(job);
      return;
    }
    COMMITTED.remove(writeId);  // files of its committed tasks are never named; the caller or gc removes them
  }

  @Override
  public void setupTask(TaskAttemptContext task) {
    if (!direct()) {
      fallback.setupTask(task);
      return;
    }
    written = new ArrayList<>();
  }

  @Override
  public String newTaskTempFile(TaskAttemptContext task, Option<String> dir, String ext) {
    return newTaskTempFile(task, dir, new FileNameSpec("", ext));
  }

  @Override
  public String newTaskTempFile(TaskAttemptContext task, Option<String> dir, FileNameSpec spec) {
    if (!direct()) {
      return fallback.newTaskTempFile(task, dir, spec);
    }
    // unique per job, task and attempt: two attempts of one task never write one name
    String name = String.format("%spart-%05d-%s-a%d%s", spec.prefix(), task.getTaskAttemptID().getTaskID().getId(),
        jobId, task.getTaskAttemptID().getId(), spec.suffix());
    String partitionDir = dir.isDefined() ? dir.get() : "";
    String folder = redirects.get(partitionDir);
    Path file;
    if (folder != null) {
      file = new Path(folder, name);
    } else if (partitionDir.isEmpty()) {
      file = new Path(path, name);
    } else {
      file = new Path(new Path(path, partitionDir), name);
    }
    written.add(new String[] {partitionDir, name, file.toString()});
    KnownFileStatus.writing(file);  // its file system may count its bytes: no lookup of its size afterwards
    return file.toString();
  }

  @Override
  public String newTaskTempFileAbsPath(TaskAttemptContext task, String absoluteDir, String ext) {
    return newTaskTempFileAbsPath(task, absoluteDir, new FileNameSpec("", ext));
  }

  @Override
  public String newTaskTempFileAbsPath(TaskAttemptContext task, String absoluteDir, FileNameSpec spec) {
    if (!direct()) {
      return fallback.newTaskTempFileAbsPath(task, absoluteDir, spec);
    }
    throw new UnsupportedOperationException("branchspark writes no partition at a custom location");
  }

  @Override
  public TaskCommitMessage commitTask(TaskAttemptContext task) {
    if (!direct()) {
      return fallback.commitTask(task);
    }
    ArrayList<String> files = new ArrayList<>();
    try {
      for (String[] file : written) {
        Path at = new Path(file[2]);
        FileSystem fs = at.getFileSystem(task.getConfiguration());
        // its size (and ETag, where the store gave one) goes to the catalog, so that no reader looks it up
        // again (known as it was written where the file system counted it, else one lookup)
        FileStatus status = fs.getFileStatus(at);
        String etag = status instanceof EtagSource ? ((EtagSource) status).getEtag() : null;
        files.add(file[0] + "\t" + file[1] + "\t" + status.getLen() + (etag == null ? "" : "\t" + etag));
        KnownFileStatus.forget(at);
      }
    } catch (IOException e) {
      throw new RuntimeException(e);
    }
    return new TaskCommitMessage(files);
  }

  @Override
  public void abortTask(TaskAttemptContext task) {
    if (!direct()) {
      fallback.abortTask(task);
      return;
    }
    if (written == null) {
      return;
    }
    for (String[] file : written) {  // best effort: an unnamed file is garbage either way
      KnownFileStatus.forget(new Path(file[2]));
      try {
        Path at = new Path(file[2]);
        at.getFileSystem(task.getConfiguration()).delete(at, false);
      } catch (IOException | RuntimeException ignored) {
        // gc removes it
      }
    }
  }

  @Override
  public boolean deleteWithJob(FileSystem fs, Path path, boolean recursive) {
    return direct() ? super.deleteWithJob(fs, path, recursive) : fallback.deleteWithJob(fs, path, recursive);
  }

  @Override
  public void onTaskCommit(TaskCommitMessage message) {
    if (!direct()) {
      fallback.onTaskCommit(message);
    }
  }
}
