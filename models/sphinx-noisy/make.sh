#!/bin/bash
# Rebuilds the noise-adapted acoustic model in this folder (means, variances, sendump,
# transition_matrices): MAP adaptation of Debian's pocketsphinx en-us model on synthetic
# commands under pink, white and brown noise. Needs: apt-get install sphinxtrain
# sphinxbase-utils pocketsphinx-en-us espeak-ng flite sox python3. Takes ~4 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${SPHINX_MODEL:-/usr/share/pocketsphinx/model/en-us}
st=/usr/lib/sphinxtrain
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp -r "$src/en-us" base
python3 "$here/sendump2mixw.py" base/sendump base/mixture_weights
pocketsphinx_mdef_convert -text base/mdef base/mdef.txt >/dev/null 2>&1
for c in pink white brown; do
  sox -R -n -r 16000 -c 1 -b 16 -e signed -t raw $c.raw synth 120 ${c}noise vol 0.3
done
# Voices none of which `voxdesk bench voice` measures with.
V="espeak-ng:-v:en-us+m1:-s:150,espeak-ng:-v:en-us+m3:-s:170,espeak-ng:-v:en-us+f2:-s:150"
V="$V,espeak-ng:-v:en-us+klatt3:-s:150,flite:-voice:kal16,flite:-voice:awb"
V="$V,espeak-ng:-v:en-us+f4:-s:140,espeak-ng:-v:en-us+m5:-s:160"
python3 "$here/gen.py" tr 1 "$V" 200,20,15,10,5 pink,white,brown 40
sed 's/<s>//;s/<\/s>//;s/(.*)//' tr.transcription | tr ' ' '\n' | sort -u | grep -v '^$' > words.txt
awk 'NR==FNR{w[$1]=1;next} {k=$1; sub(/\([0-9]+\)$/,"",k)} k in w' words.txt "$src/cmudict-en-us.dict" > ad.dict
printf 'cosine K OW S AY N\nbackspace B AE K S P EY S\n' >> ad.dict
sphinx_fe -argfile base/feat.params -samprate 16000 -c tr.fileids -di . -do . -ei raw -eo mfc >/dev/null 2>&1
mkdir acc
$st/bw -hmmdir base -moddeffn base/mdef.txt -ts2cbfn .ptm. -feat 1s_c_d_dd -svspec 0-12/13-25/26-38 \
  -cmn current -agc none -dictfn ad.dict -fdictfn base/noisedict -ctlfn tr.fileids \
  -lsnfn tr.transcription -accumdir acc >bw.log 2>&1
mkdir out
$st/map_adapt -moddeffn base/mdef.txt -ts2cbfn .ptm. -meanfn base/means -varfn base/variances \
  -mixwfn base/mixture_weights -tmatfn base/transition_matrices -accumdir acc \
  -mapmeanfn out/means -mapvarfn out/variances -mapmixwfn out/mixture_weights \
  -maptmatfn out/transition_matrices >map.log 2>&1
$st/mk_s2sendump -pocketsphinx yes -moddeffn base/mdef.txt -mixwfn out/mixture_weights \
  -sendumpfn out/sendump >/dev/null 2>&1
cp out/means out/variances out/sendump out/transition_matrices "$here/"
echo "wrote $here/{means,variances,sendump,transition_matrices}"
