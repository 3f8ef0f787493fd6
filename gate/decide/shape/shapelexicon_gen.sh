#!/bin/sh
# Regenerates shapelexicon_en.txt from Debian's word lists (apt-get install
# wamerican wbritish-small): every entry, possessives left out, sorted.
set -eu
cd "$(dirname "$0")"
{
	sed -n '1,/^# gate\/decide\/shape\/shapelexicon_COPYING\.$/p' shapelexicon_en.txt
	cat /usr/share/dict/american-english /usr/share/dict/british-english-small | grep -v "'s\$" | LC_ALL=C sort -u
} >shapelexicon_en.txt.new
mv shapelexicon_en.txt.new shapelexicon_en.txt
