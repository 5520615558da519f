# Both targets install what they need into .venv first, so each works on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))

.PHONY: install spark-iceberg peers spark41 test test-long demo demo-s3 bench bench-dbt bench-dbt-cli bench-peers bench-peers-one-process test-model test-model-long

# uv installs the same packages as pip (the same versions, checked with `pip freeze`) in about two thirds of the
# time on a fresh machine: 48 s against 74 s without caches, bytecode compiled as pip does (2026-11-29).
# An editable install compiles nothing of the package itself, and where PYTHONDONTWRITEBYTECODE is set (this
# machine, CI) every Python process the tests start would compile it again (0.12 s each): compiled here.
$(VENV)/.installed: setup.py
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet uv
	$(VENV)/bin/uv pip install --quiet --compile-bytecode --python $(PY) -e ".[test]"
	$(PY) -m compileall -q dbt
	touch $@

# The JDK branchspark's JVMs run on (core/jvm_home.py): the newest from 17 to 25 installed here (jars/jdk_home.sh),
# written to .jars/jdk/spark-<pyspark's version>. On JDK 25, each with its class-data archive, a fresh process's
# first upsert of 100k rows took 10-20% less than on 17, the next three 3-11% less, and a 10M-row scan 6% less
# (docs/performance.md, "branchspark on JDK 25"). .venv-peers' Spark 4.1 finds no choice of its version and keeps
# `java` on the PATH (its Hadoop cannot start on JDK 25: `getSubject is not supported`). A JAVA_HOME the caller
# sets stays theirs; `make install JDK=/path` picks another; an empty JDK leaves Spark's own choice. The file is
# rewritten only when the choice changes, so the class-data archive, dumped by that JDK, is made again only then.
# On JDK 25 and later the file names a launcher home (.jars/jdk/launcher-<jdk>: the JDK's files, and a bin/java that
# leaves out Spark's --add-modules=jdk.incubator.vector), through which the AOT cache below links classes ahead
# and replays method profiles (core/jvm_home.py).
JDK ?= $(shell jars/jdk_home.sh 25)
JDK_CHOICE := .jars/jdk/.chosen
$(JDK_CHOICE): $(VENV)/.installed FORCE
	@file=".jars/jdk/spark-$$($(PY) -c 'import pyspark; print(pyspark.__version__)')"; \
	  if [ ! -e $@ ] || [ "$$(cat $@)" != "$$file $(JDK) launcher" ]; then \
	    mkdir -p .jars/jdk && rm -rf .jars/jdk/spark-* .jars/jdk/launcher-*; \
	    if [ -n "$(JDK)" ]; then $(PY) -m dbt.adapters.branchspark.core.jvm_home --choose "$(JDK)" > "$$file"; fi; \
	    echo "$$file $(JDK) launcher" > $@; echo "branchspark's JVMs run on: $(or $(JDK),Spark's own choice of JDK)"; fi
.PHONY: FORCE
FORCE:

# branchspark's jar (deletion vectors, a local file system), compiled against the installed pyspark when
# its sources change (never at run time); without a JDK the build says so and reads apply tombstones by a join.
JVM_DIR := dbt/adapters/branchspark/core/storage/jvm
JAR_STAMP := $(JVM_DIR)/.built
S3_JARS := .jars/s3/.fetched
# after the S3A jars: the jar's S3A file system (jvm/s3a/) is built against them
$(JAR_STAMP): $(VENV)/.installed $(S3_JARS) $(wildcard $(JVM_DIR)/*.java $(JVM_DIR)/s3a/*.java)
	$(PY) -m dbt.adapters.branchspark.core.storage.jvm_build && touch $@ || true

# The S3A connector (hadoop-aws at pyspark's Hadoop, the AWS SDK modules it calls) and Spark's cloud committers,
# for a warehouse on s3a:// (docs/deploy.md): resolved by Maven from jars/s3/pom.xml into .jars/s3 at install,
# never at run time; core/storage/object_store.py adds them to every session's spark.jars. About 14 MB.
$(S3_JARS): jars/s3/pom.xml
	rm -rf .jars/s3
	mvn -q -B -f jars/s3/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	  -DoutputDirectory="$(abspath .jars/s3)"
	touch $@

# The JVM's class-data archive (core/jvm_archive.py): one driver JVM does a branch's usual work and dumps the
# classes it loaded; every driver JVM branchspark starts then maps them and starts Spark in about 0.6 of the time.
# Made after the jars the driver's class path names, which the archive records. About 30 s and 180 MB. Through a
# launcher home (JDK 25 and later, above), also the JDK's AOT cache, from a second JVM that does the same work at
# 200k rows too: classes linked ahead and the methods' profiles, so a fresh process's first writes warm up sooner.
# About 80 s and 230 MB more.
JVM_ARCHIVE := .jars/jvm-archive/.built
$(JVM_ARCHIVE): $(VENV)/.installed $(JDK_CHOICE) $(JAR_STAMP) $(S3_JARS)
	$(PY) -m dbt.adapters.branchspark.core.jvm_archive_build && touch $@ || true

# dbt --version lists only adapters found under site-packages/dbt/adapters, where an editable install
# puts nothing (dbt-core issue 8504): a link there makes it list branchspark under Plugins.
install: $(VENV)/.installed $(JDK_CHOICE) $(JAR_STAMP) $(S3_JARS) $(JVM_ARCHIVE)
	@ln -sfn "$(abspath dbt/adapters/branchspark)" \
	  "$$($(PY) -c 'import dbt.adapters; print(dbt.adapters.__path__[0])')/branchspark"

# Spark with Iceberg's runtime, the reader `make test` runs against `branchspark serve` (issue 52), and half of
# the peers (below). Iceberg has no runtime for Spark 4.3 yet, so it gets its own environment, .venv-peers
# (pyspark 4.1 alone, jars/spark-iceberg/requirements.txt; from cold caches pip took 4.5 minutes, uv 29-37 s:
# docs/performance.md), and Iceberg's runtime jar alone from Maven (jars/spark-iceberg/pom.xml ->
# .jars/spark-iceberg/), both at install time, never at run time. The environment gets uv of its own, so that
# under `make -j2 install spark-iceberg` (.ci/run) it installs beside .venv's install, not after it.
PEERS_VENV := .venv-peers
SPARK_ICEBERG_JARS := .jars/spark-iceberg
$(PEERS_VENV)/.installed: jars/spark-iceberg/requirements.txt
	python3 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet uv
	$(PEERS_VENV)/bin/uv pip install --quiet --python $(PEERS_VENV)/bin/python -r jars/spark-iceberg/requirements.txt
	touch $@
# Maven 3.8 does not lock its local repository: one Maven at a time, even under make -j2 (order-only)
$(SPARK_ICEBERG_JARS)/.copied: jars/spark-iceberg/pom.xml | $(S3_JARS)
	rm -rf $(SPARK_ICEBERG_JARS)
	mvn -q -B -f jars/spark-iceberg/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	  -DoutputDirectory="$(abspath $(SPARK_ICEBERG_JARS))"
	touch $@
spark-iceberg: $(PEERS_VENV)/.installed $(SPARK_ICEBERG_JARS)/.copied

# The peers (issue 52): Spark as other teams run it, with Iceberg's runtime (above) and Delta Lake, for
# bench/peers.py; Delta's jars come from Maven at install time (jars/peers/pom.xml -> .jars/peers/).
PEERS_JARS := .jars/peers
$(PEERS_JARS)/.copied: jars/peers/pom.xml | $(SPARK_ICEBERG_JARS)/.copied
	rm -rf $(PEERS_JARS)
	mvn -q -B -f jars/peers/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
	  -DoutputDirectory="$(abspath $(PEERS_JARS))"
	touch $@
$(PEERS_VENV)/.bench: jars/peers/requirements.txt $(PEERS_VENV)/.installed
	$(PEERS_VENV)/bin/uv pip install --quiet --python $(PEERS_VENV)/bin/python -r jars/peers/requirements.txt
	touch $@
peers: spark-iceberg $(PEERS_VENV)/.bench $(PEERS_JARS)/.copied $(PEERS_VENV)/.branchspark

# branchspark itself on Spark 4.1 (issue 68): the newest Spark with Delta's and Iceberg's runtimes, which a team's
# lakehouse needs in branchspark's own session; `make test` runs its sources flow there (tests/spark41_sources.py).
# Installed after .venv's install (one editable build of the checkout at a time), pyspark kept at 4.1.4, and
# branchspark's jar built against it (jvm/branchspark-spark4.1.4.jar, beside 4.3's).
$(PEERS_VENV)/.branchspark: setup.py jars/spark-iceberg/requirements.txt $(PEERS_VENV)/.installed $(wildcard $(JVM_DIR)/*.java $(JVM_DIR)/s3a/*.java) \
    | $(VENV)/.installed
	$(PEERS_VENV)/bin/uv pip install --quiet --python $(PEERS_VENV)/bin/python -e . -r jars/spark-iceberg/requirements.txt
	$(PEERS_VENV)/bin/python -m dbt.adapters.branchspark.core.storage.jvm_build || true
	touch $@
# what the sources flow needs of Spark 4.1: Iceberg's and Delta's jars, branchspark installed beside them
spark41: spark-iceberg $(PEERS_JARS)/.copied $(PEERS_VENV)/.branchspark

# tests/run.sh starts a private PostgreSQL, moto's S3 server and a Spark standalone cluster with a Spark Connect
# server on 127.0.0.1 (unless the BRANCHSPARK_TEST_*_URL variables name running ones), then runs the suite
# in-process, and dbt's conformance suites, the merge base, deletion-vector tests and the sample project on S3
# through Spark Connect on the cluster. Aimed at 20 minutes on 2 cores with the install (issue 50): the random
# and stress tests run small (tests/depth.py).
test: install spark41
	PY=$(PY) bash tests/run.sh

# The deep profiles, run before resolving an issue that touches merge, changes, writes, storage or the
# catalog (docs/tests.md): the tests `make test` runs small at full size (the model test's 300 cases per
# table kind, 10 metamorphic batches per kind, every crash fault point on both catalogs, the concurrency test at
# full size) and what only this runs; then one new random chunk per table kind of the long ledger.
test-long: install peers
	BRANCHSPARK_TEST_DEPTH=long PY=$(PY) bash tests/run.sh
	$(PY) -m tests.model.long_run --more 1 --batches 2

demo: install
	cd sample_project && PATH="$(abspath $(VENV))/bin:$$PATH" bash run_demo.sh

# The same demo with its warehouse on an S3-compatible server (moto on 127.0.0.1, issue 51; docs/deploy.md)
demo-s3: install
	PY=$(PY) bash sample_project/run_demo_on_s3.sh

bench: install
	$(PY) bench/branch_create.py

# the sample dbt project on branchspark against plain dbt-spark (parquet); several minutes
bench-dbt: install
	$(PY) bench/dbt_run.py

# issue 19: merges and change feeds against the model of SPEC 3-4 (tests/model/profiles.py):
# test-model runs the full profile (300 cases per table kind); test-model-long runs random ones in resumable
# chunks (tests/model/long_run.py, its ledger tests/model/long_ledger.tsv) until 2,550 per kind (5,100 in all) have run.
test-model: install
	BRANCHSPARK_TEST_DEPTH=long $(PY) -m pytest tests/model -q -p no:cacheprovider

test-model-long: install
	$(PY) -m tests.model.long_run

# issue 52: branchspark against Delta Lake and Apache Iceberg (the peers' environment) on the same work;
# `make bench-peers ARGS="--scale 0.01"` for a small run
bench-peers: install peers
	$(PY) bench/peers.py $(ARGS)

# branchspark and Iceberg merge-on-read in one Spark 4.1 process, turn about: `make bench-peers-one-process ARGS="--scale 0.01"`
bench-peers-one-process: install peers
	$(PY) bench/peers_one_process.py $(ARGS)

# dbt from the shell, per invocation: warm local engine, method: session, dbt-spark, dbt-duckdb; several minutes
bench-dbt-cli: install
	$(PY) bench/dbt_cli.py
