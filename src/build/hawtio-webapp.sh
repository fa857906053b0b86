#!/usr/bin/env bash
# Makes the war the hawtio command serves (io.jobgate.hawtio): the Hawtio war as Maven unpacked it,
# plus its code editor. Hawtio loads monaco-editor from a CDN at run time; offline the Source tab
# hangs on "Loading...". So: the same monaco version from npm (its tarball checked against the
# integrity pinned in pom.xml), its min/vs under static/monaco/vs, the loader pointed there, and
# jobgate's name on the console. Run by exec-maven-plugin at process-resources.
#
#   hawtio-webapp.sh WEBAPP_DIR OUT_WAR MONACO_VERSION MONACO_INTEGRITY JAR_TOOL [ENTRY_DATE]
# ENTRY_DATE (project.build.outputTimestamp): every entry's time, so two builds give the same war.
set -euo pipefail
unpacked=$1 out=$2 version=$3 integrity=$4 jar=$5 date=${6:-2026-01-01T00:00:00Z}
script=${BASH_SOURCE[0]}

# Up to date (same inputs, built after this script and the unpacked war): nothing to do, so
# "mvn test" stays quick.
stamp="$(dirname "$unpacked")/hawtio-webapp.inputs"
inputs="monaco-editor@$version $integrity"
if [ -f "$out" ] && [ "$out" -nt "$script" ] && [ "$out" -nt "$unpacked/index.html" ] \
    && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy: Maven unpacks the war once, and this must give the same result every time.
webapp="$work/webapp"
cp -r "$unpacked" "$webapp"
# npm's own cache serves later builds without the network; a machine with only a JDK and Maven
# fetches the same tarball from the registry (checked the same way below).
tarball="$work/monaco-editor-$version.tgz"
registry="${npm_config_registry:-https://registry.npmjs.org}"
url="${registry%/}/monaco-editor/-/monaco-editor-$version.tgz"
if command -v npm >/dev/null; then
  (cd "$work" && npm pack --silent "monaco-editor@$version" >/dev/null)
elif command -v curl >/dev/null; then
  curl -fsSL -o "$tarball" "$url"
elif command -v wget >/dev/null; then
  wget -q -O "$tarball" "$url"
else
  echo "hawtio-webapp.sh: npm, curl or wget is needed to fetch monaco-editor $version" >&2
  exit 1
fi
# npm's integrity is sha512-<base64 digest>; compare as hex (coreutils only).
expected=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
actual=$(sha512sum "$tarball" | cut -d' ' -f1)
if [ "$actual" != "$expected" ]; then
  echo "hawtio-webapp.sh: monaco-editor $version has sha512 $actual, expected $expected ($integrity)" >&2
  exit 1
fi
rm -rf "$webapp/static/monaco"
mkdir -p "$webapp/static/monaco"
tar -xzf "$tarball" -C "$work" package/min/vs
mv "$work/package/min/vs" "$webapp/static/monaco/vs"

# The loader's configured path (an https URL ending in /monaco-editor@<version>/min/vs) -> local.
chunks=$(grep -l "monaco-editor@$version/min/vs" "$webapp"/static/js/*.js || true)
[ -n "$chunks" ] || { echo "hawtio-webapp.sh: no chunk names monaco-editor@$version (another Hawtio version?)" >&2; exit 1; }
for chunk in $chunks; do
  sed -i -E "s#https://[^\"']+/monaco-editor@$version/min/vs#/hawtio/static/monaco/vs#g" "$chunk"
done
if grep -q "https://[^\"']*/monaco-editor@" "$webapp"/static/js/*.js; then
  echo "hawtio-webapp.sh: a CDN path to monaco is left" >&2
  exit 1
fi

sed -i 's#"appName": "Hawtio Management Console"#"appName": "jobgate · Hawtio"#' "$webapp/hawtconfig.json"

mkdir -p "$(dirname "$out")"
rm -f "$out"
"$jar" --create --no-manifest --date="$date" --file "$out" -C "$webapp" .
printf '%s' "$inputs" > "$stamp"
