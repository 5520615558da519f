package branchspark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.LongBuffer;

/**
 * The keys a keyed table's tombstones delete, with the newest tombstone sequence of each: a row is
 * deleted when a tombstone with its key is newer than the row (its sequence is lower than the
 * tombstone's), as the keyed anti-join decides it (storage/reader.py), here tested per row in the scan
 * without a broadcast job.
 *
 * <p>The keys are one binary value: [int n][n big-endian longs: the keys, ascending][n longs: the
 * newest tombstone sequence of each]. Each task decodes its own copy once into an open-addressing table
 * (Spark gives every task its own deserialized copy of this object).
 */
public final class DeletedKeys implements Serializable {
  private static final long serialVersionUID = 1L;
  /** What {@link #newestTombstone} gives for a key no tombstone names. */
  public static final long NONE = Long.MIN_VALUE;

  private final byte[] encoded;
  private transient long[] slots;  // keys, by hash; `used` says which slots hold one
  private transient long[] sequences;
  private transient boolean[] used;
  private transient int mask;

  public DeletedKeys(byte[] encoded) {
    this.encoded = encoded;
  }

  /** The newest sequence of the tombstones that name `key`, or {@link #NONE}. */
  public long newestTombstone(long key) {
    if (slots == null) {
      decode();
    }
    int slot = mix(key) & mask;
    while (used[slot]) {
      if (slots[slot] == key) {
        return sequences[slot];
      }
      slot = (slot + 1) & mask;
    }
    return NONE;
  }

  /** True when a tombstone newer than a row of `key` written with `sequence` deletes it. */
  public boolean isDeleted(long key, long sequence) {
    long newest = newestTombstone(key);
    return newest != NONE && sequence < newest;
  }

  private static int mix(long key) {  // the finalizer of MurmurHash3: neighbouring keys spread
    key ^= key >>> 33;
    key *= 0xff51afd7ed558ccdL;
    key ^= key >>> 33;
    key *= 0xc4ceb9fe1a85ec53L;
    key ^= key >>> 33;
    return (int) key;
  }

  private void decode() {
    ByteBuffer buffer = ByteBuffer.wrap(encoded);
    int count = encoded.length == 0 ? 0 : buffer.getInt();
    LongBuffer longs = buffer.asLongBuffer();
    int capacity = Integer.highestOneBit(Math.max(4, count * 2 - 1)) << 1;  // at most half full
    long[] keys = new long[capacity];
    long[] newest = new long[capacity];
    boolean[] taken = new boolean[capacity];
    int slotMask = capacity - 1;
    for (int i = 0; i < count; i++) {
      long key = longs.get(i);
      int slot = mix(key) & slotMask;
      while (taken[slot]) {
        slot = (slot + 1) & slotMask;
      }
      taken[slot] = true;
      keys[slot] = key;
      newest[slot] = longs.get(count + i);
    }
    sequences = newest;
    used = taken;
    mask = slotMask;
    slots = keys;
  }
}
