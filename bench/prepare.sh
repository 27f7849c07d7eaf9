# Sourced by bench/run.sh and bench/live.sh: creates .venv-bench from bench/requirements.txt
# (rvc-next, the reference; torch linked in from the project's .venv instead of downloaded again)
# and writes the seeded random-weight models and the input into target/bench
# (bench/make_models.py), each only when what makes it has changed. Sets `venv` and `out`.
out=target/bench
venv=.venv-bench

requirements=$(sha256sum bench/requirements.txt | cut -c1-16)
if [[ ! -x $venv/bin/python || "$(cat $venv/.requirements 2>/dev/null)" != "$requirements" ]]; then
  echo "bench: creating $venv"
  rm -rf $venv
  .venv/bin/python -m venv $venv
  site_packages() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
  site_packages .venv/bin/python > "$(site_packages $venv/bin/python)/timbre-project-venv.pth"
  $venv/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
  echo "$requirements" > $venv/.requirements
fi

models=$(cat bench/make_models.py bench/requirements.txt | sha256sum | cut -c1-16)
if [[ "$(cat $out/.models 2>/dev/null)" != "$models" ]]; then
  echo "bench: writing the models and the input into $out"
  mkdir -p $out
  $venv/bin/python bench/make_models.py $out
  echo "$models" > $out/.models
fi
