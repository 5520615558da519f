package branchspark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * fs.file.impl=branchspark.PosixLocalFileSystem: Hadoop's local file system, with permissions set through
 * java.nio. Without Hadoop's native library (pyspark ships none) Hadoop starts a `chmod` process for every
 * permission it sets, one per directory a write makes: about 4 ms each, a fifth to a third of a small
 * Parquet write's time (local_files.py). Everything else, checksum files included, is Hadoop's own.
 */
public final class PosixLocalFileSystem extends LocalFileSystem {
  public PosixLocalFileSystem() {
    super(new Raw());
  }

  /** The raw file system under the checksums: only setPermission differs. */
  public static final class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      if (permission.getStickyBit()) {  // java.nio cannot set it: Hadoop's way
        super.setPermission(path, permission);
        return;
      }
      Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
      add(bits, permission.getUserAction(), PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
          PosixFilePermission.OWNER_EXECUTE);
      add(bits, permission.getGroupAction(), PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
          PosixFilePermission.GROUP_EXECUTE);
      add(bits, permission.getOtherAction(), PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
          PosixFilePermission.OTHERS_EXECUTE);
      Files.setPosixFilePermissions(pathToFile(path).toPath(), bits);
    }

    private static void add(Set<PosixFilePermission> bits, FsAction action, PosixFilePermission read,
                            PosixFilePermission write, PosixFilePermission execute) {
      if (action.implies(FsAction.READ)) {
        bits.add(read);
      }
      if (action.implies(FsAction.WRITE)) {
        bits.add(write);
      }
      if (action.implies(FsAction.EXECUTE)) {
        bits.add(execute);
      }
    }
  }
}
