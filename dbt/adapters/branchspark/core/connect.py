"""Spark Connect or classic: the one test of what kind a session is (the core runs the same on both), and
where the two differ in a way the core must work around."""
from __future__ import annotations


def is_connect(session) -> bool:
    """True for a Spark Connect client session (no SparkContext, no JVM in this process)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def local_checkpoint(frame, eager: bool = True):
    """`frame.localCheckpoint()`, in `frame`'s own session on Spark Connect too.

    Through Connect, pyspark (4.1.4 and 4.3.0: `conversion.proto_to_remote_cached_dataframe`) binds the
    checkpointed frame to `SparkSession.active()`, not to the session that made it: in any other session
    (`spark.newSession()`, a second client) the next query sends the checkpoint's id to the wrong server
    session and fails with DATAFRAME_NOT_FOUND. The checkpoint is bound back to its own session here; the frame
    pyspark returned gives up its id, so that collecting it releases nothing (it would ask the wrong session anyway)."""
    checkpointed = frame.localCheckpoint(eager=eager)
    session = frame.sparkSession
    if not is_connect(session) or checkpointed.sparkSession is session:
        return checkpointed
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import CachedRemoteRelation

    relation_id = checkpointed._plan._relation_id
    checkpointed._plan._relation_id = None
    return DataFrame(CachedRemoteRelation(relation_id, session), session)
