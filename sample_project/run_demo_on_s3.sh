#!/usr/bin/env bash
# The demo (run_demo.sh) with its warehouse on an S3-compatible server: moto's server mode on 127.0.0.1
# (tests/moto_server.sh, port $BRANCHSPARK_S3_PORT, default 5090), a bucket made for it, and only what a user
# sets (docs/deploy.md): the four AWS variables, the warehouse URI and a catalog URL (a catalog cannot live in
# an object store: a SQLite file here). `make demo-s3`; at the end it counts the bucket's objects and the
# server's requests. With AWS_ENDPOINT_URL already set, it uses that server and its bucket
# (BRANCHSPARK_DEMO_BUCKET, default branchspark-demo) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PY:-$REPO/.venv/bin/python}
BUCKET=${BRANCHSPARK_DEMO_BUCKET:-branchspark-demo}
state=$(mktemp -d)  # the catalog and the engine's home: removed at the end, also when a step fails
own_server=
cleanup() { rm -rf "$state"; if [ -n "$own_server" ]; then "$REPO/tests/moto_server.sh" stop; fi; }
trap cleanup EXIT
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
  export BRANCHSPARK_S3_PORT=${BRANCHSPARK_S3_PORT:-5090}
  AWS_ENDPOINT_URL=$(tests/moto_server.sh start)
  own_server=1
  export AWS_ENDPOINT_URL AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo-secret
fi
"$PY" -c "import boto3, sys; s3 = boto3.client('s3')
if sys.argv[1] not in [b['Name'] for b in s3.list_buckets()['Buckets']]: s3.create_bucket(Bucket=sys.argv[1])" "$BUCKET"
export BRANCHSPARK_DEMO_WAREHOUSE=s3a://$BUCKET/demo-$(date +%s)
export BRANCHSPARK_CATALOG_URL=sqlite:///$state/catalog.db
# an engine of its own, started with these variables (a running one may have been started without them)
export BRANCHSPARK_ENGINE_HOME=$state/engine
echo "warehouse $BRANCHSPARK_DEMO_WAREHOUSE on $AWS_ENDPOINT_URL, catalog $BRANCHSPARK_CATALOG_URL"
PATH="$(dirname "$PY"):$PATH" bash sample_project/run_demo.sh
"$PY" -c "import boto3, sys; s3 = boto3.client('s3'); prefix = sys.argv[2].split('/', 3)[3] + '/'
objects = [o for page in s3.get_paginator('list_objects_v2').paginate(Bucket=sys.argv[1], Prefix=prefix)
           for o in page.get('Contents', [])]
print(f'the warehouse holds {len(objects)} objects, {sum(o[\"Size\"] for o in objects):,} bytes, in s3a://{sys.argv[1]}/{prefix}')
" "$BUCKET" "$BRANCHSPARK_DEMO_WAREHOUSE"
if [ -f ".moto-server/${BRANCHSPARK_S3_PORT:-}/requests.log" ]; then
  echo "the S3 server answered $(grep -c '" [0-9][0-9][0-9] ' ".moto-server/$BRANCHSPARK_S3_PORT/requests.log" || true) requests"
fi
