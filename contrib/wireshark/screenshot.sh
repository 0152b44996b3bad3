#!/bin/sh
# screenshot.sh: redo docs/img/wireshark-iwarp.png, Wireshark with iwarp.lua
# showing `iwarp demo`'s RFC 7306 Atomic Requests (CmpSwap) in the packet
# list and a V2 Send with Immediate in the packet details.
#
# Needs Go, and Debian's wireshark-qt, xvfb, xdotool and imagemagick. Run
# from the repository root: sh contrib/wireshark/screenshot.sh [OUT.png]
# The clicks are placed for Wireshark 4.0's default layout and fonts on a
# 1280x900 screen; check the picture after a Wireshark upgrade.
set -eu

out=${1:-docs/img/wireshark-iwarp.png}
plugin=$(pwd)/contrib/wireshark/iwarp.lua
work=$(mktemp -d)
cleanup() {
	[ -n "${wspid:-}" ] && kill "$wspid" 2>/dev/null
	[ -n "${xpid:-}" ] && kill "$xpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

go run ./cmd/iwarp demo -max 65536 -pcap "$work/demo.pcap" >/dev/null
frame=$(tshark -r "$work/demo.pcap" -X "lua_script:$plugin" \
	-Y 'iwarp.rdmap.opcode == 0x13 && iwarp.rdmap.immediate' -T fields -e frame.number 2>/dev/null | head -n 1)

# A display of its own and an empty Wireshark profile.
export HOME="$work/home" DISPLAY=:97
mkdir -p "$HOME"
Xvfb "$DISPLAY" -screen 0 1280x900x24 -nolisten tcp >/dev/null 2>&1 &
xpid=$!
sleep 1
wireshark -r "$work/demo.pcap" -X "lua_script:$plugin" \
	-o gui.layout_content_3:NONE \
	-o 'gui.column.format:"No.","%m","Protocol","%p","Length","%L","Info","%i"' \
	-Y '(iwarp.mpa.request || iwarp.mpa.reply) && frame.number < 100 || iwarp.rdmap.opcode == 0x13 || iwarp.rdmap.atomic.aopcode == 2' \
	-g "$frame" >"$work/wireshark.log" 2>&1 &
wspid=$!
win=$(xdotool search --sync --onlyvisible --name demo.pcap)
xdotool windowmove "$win" 0 0 windowsize "$win" 1280 900
sleep 3
# Move the splitter between the packet list and the details up, select the
# iWARP item of the details (the fifth line) and expand its subtrees.
xdotool mousemove 640 483 mousedown 1 mousemove 640 420 mousemove 640 330 mousemove 640 320 mouseup 1
sleep 1
xdotool mousemove 300 400 click 1
sleep 1
xdotool key shift+Right
sleep 2
import -window root "$work/shot.png"
convert "$work/shot.png" -strip "$out"
echo "wrote $out (frame $frame selected)"
