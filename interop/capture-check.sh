# capture-check.sh: the interop suite's verdict on a session's capture,
# sourced by interop/suite.sh (and by interop/capture_check_test.go, which
# runs classify_tshark_crcs on recorded inputs).
#
# A capture passes when `iwarp decode` reads it cleanly (no bad CRC, no
# decoding error, CRC on or off as expected) and, where CRC is on, tshark
# agrees on every CRC. tshark is a second opinion with a known weakness:
# its MPA dissector reassembles FPDUs from TCP segments as they come, and a
# retransmitted, out-of-order or missing segment can make it cut FPDUs at
# the wrong places and report bad CRCs for good bytes. (A run of 2026-11-26
# saw tshark report 32 bad CRCs where `iwarp decode`, which reassembles the
# byte stream first, found 1,000 of 1,000 FPDUs good and one retransmitted
# segment.) So a CRC tshark reports not good fails the run only if
# `iwarp decode` finds that frame's FPDU bad too, or if no retransmission,
# out-of-order or lost segment came before it in the same direction of the
# connection; otherwise the run passes and says it saw such an artefact.

# tshark_args are the options that make tshark find MPA on any port and
# keep Send payloads away from the SMB Direct and RPC-over-RDMA dissectors.
tshark_args=(-o tcp.try_heuristic_first:TRUE
  --disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)

# tshark_crcs FILE prints, per frame where tshark checked MPA CRCs,
# "FRAME SRCPORT>DSTPORT VERDICTS", one letter per CRC in the frame: g
# (good) or b (anything else).
tshark_crcs() {
  tshark -r "$1" "${tshark_args[@]}" -V -O iwarp_mpa 2>/dev/null | awk '
    function flush() { if (v != "") print frame, dir, v; v = "" }
    /^Frame [0-9]+:/ { flush(); frame = $2; sub(/:$/, "", frame); dir = "" }
    /^Transmission Control Protocol, Src Port: / {
      s = $0; sub(/.*Src Port: /, "", s); sub(/,.*/, "", s)
      d = $0; sub(/.*Dst Port: /, "", d); sub(/,.*/, "", d)
      dir = s ">" d
    }
    /CRC check:/ { v = v (/Good CRC32/ ? "g" : "b") }
    END { flush() }'
}

# tshark_tcp_events FILE prints, per frame tshark's TCP analysis flags as
# a retransmission, out-of-order or lost (not captured) segment,
# "FRAME SRCPORT>DSTPORT KIND[,KIND...]".
tshark_tcp_events() {
  local f kinds=(retransmission fast_retransmission spurious_retransmission out_of_order lost_segment)
  local fields=() filter=""
  for f in "${kinds[@]}"; do
    fields+=(-e "tcp.analysis.$f")
    filter="${filter:+$filter || }tcp.analysis.$f"
  done
  tshark -r "$1" "${tshark_args[@]}" -Y "$filter" -T fields -E separator=/t \
    -e frame.number -e tcp.srcport -e tcp.dstport "${fields[@]}" 2>/dev/null |
    awk -F '\t' -v names="${kinds[*]}" '
      BEGIN { n = split(names, name, " ") }
      { k = ""; for (i = 1; i <= n; i++) if ($(i + 3) != "") k = k (k == "" ? "" : ",") name[i]
        print $1, $2 ">" $3, k }'
}

# classify_tshark_crcs CRCS EVENTS DECODE: the verdict on tshark's CRCs.
# CRCS is tshark_crcs's output, EVENTS tshark_tcp_events's, DECODE the
# text of `iwarp decode` (its FPDU lines start with the frame number and
# carry crc=good(...) or crc=bad(...)); all three are file names. Prints
# nothing and succeeds when every CRC is good; prints what it saw and
# succeeds when every CRC that is not good is an artefact of reassembly
# (good in iwarp decode, after a TCP event in the same direction); prints
# the reason and fails otherwise.
classify_tshark_crcs() {
  awk -v crcs="$1" -v events="$2" -v decode="$3" '
    function frames(list,   out, i, m) {
      m = split(list, out, " "); list = ""
      for (i = 1; i <= m && i <= 5; i++) list = list (i > 1 ? " " : "") out[i]
      return list (m > 5 ? " ..." : "")
    }
    BEGIN {
      name["retransmission"] = "retransmission"; name["fast_retransmission"] = "fast retransmission"
      name["spurious_retransmission"] = "spurious retransmission"
      name["out_of_order"] = "out-of-order segment"; name["lost_segment"] = "segment not captured"
      while ((getline line < events) > 0) {
        split(line, e, " ")
        if (!(e[2] in first) || e[1] + 0 < first[e[2]] + 0) first[e[2]] = e[1]
        nk = split(e[3], k, ",")
        for (i = 1; i <= nk; i++) if (!((e[2], k[i]) in had)) {
          had[e[2], k[i]] = 1; kinds[e[2]] = kinds[e[2]] (kinds[e[2]] == "" ? "" : ", ") name[k[i]]
        }
      }
      while ((getline line < decode) > 0) {
        if (line ~ /^ *[0-9]+ .* crc=bad\(/) { split(line, d, " "); decbad[d[1]] = 1 }
        if (line ~ /^ *[0-9]+ .* crc=good\(/) decgood++
        if (line ~ /^ *[0-9]+ .* crc=bad\(/) decbadn++
      }
      while ((getline line < crcs) > 0) {
        split(line, c, " ")
        g = gsub(/g/, "g", c[3]); b = length(c[3]) - g
        good += g; bad += b
        if (b == 0) continue
        if (c[1] in decbad) confirmed = confirmed " " c[1]
        else if (c[2] in first && first[c[2]] + 0 <= c[1] + 0) {
          artefact = artefact " " c[1]
          if (!(c[2] in seen)) { seen[c[2]] = 1; why = why (why == "" ? "" : "; ") c[2] " from frame " first[c[2]] ": " kinds[c[2]] }
        } else unexplained = unexplained " " c[1]
      }
      head = "tshark: " good " good, " bad " not good CRCs"
      ours = "iwarp decode: " decgood + 0 " good, " decbadn + 0 " bad"
      if (good + bad == 0) { print "tshark checked no CRC"; exit 1 }
      if (confirmed != "") { print head "; bad in iwarp decode too, frames " frames(substr(confirmed, 2)); exit 1 }
      if (unexplained != "") {
        print head "; frames " frames(substr(unexplained, 2)) " not explained by a TCP retransmission, out-of-order or lost segment before them (" ours ")"
        exit 1
      }
      if (bad > 0) print head ", all after a TCP retransmission, out-of-order or missing segment in their direction (" why "), and " ours ": a tshark reassembly artefact, not a bad CRC"
      exit 0
    }'
}

# check_capture FILE PORT CRC(on|off|any): the verdict on one session's
# capture (CRC on or off as expected, or either: any),
# with the iwarp binary $IW; prints the reason and fails, or succeeds and
# prints nothing or a note (a tshark reassembly artefact). Leaves the
# decode beside the capture (FILE without .pcapng, plus .decode) and, where
# tshark reported a CRC not good, its inputs (.tshark-crcs, .tshark-tcp).
check_capture() {
  # (here-strings, not echo pipes: with pipefail a grep -q that stops
  # early kills a long echo with SIGPIPE and fails the check)
  local f=$1 port=$2 crc=$3 d sums base=${1%.pcapng}
  d=$("$IW" decode -port "$port" "$f" 2>&1)
  echo "$d" >"$base.decode"
  sums=$(grep "summary:" <<<"$d") || { echo "no iWARP connection decoded"; return 1; }
  if grep -q -E "bad [1-9]|errors [1-9]" <<<"$sums"; then echo "decode: CRC or decoding errors"; return 1; fi
  # A gap is bytes dumpcap dropped, not bytes missing from the stream (TCP
  # has no holes): the FPDUs it cuts are not errors; every other FPDU is
  # still checked. Said in the verdict, as a tshark artefact is.
  local gaps
  gaps=$(grep -o -E "gaps [1-9][0-9]* \([0-9]+ bytes, [0-9]+ FPDUs cut\)" <<<"$sums" | paste -sd ' ' -) &&
    echo "the capture lost packets (dumpcap): $gaps; every FPDU it kept decoded without error"
  case $crc in
    off) grep -q "CRC off" <<<"$sums" || { echo "decode: CRC not off"; return 1; }; return 0 ;;
    on) grep -q "CRC on" <<<"$sums" || { echo "decode: CRC not on"; return 1; } ;;
    any) grep -q "CRC on" <<<"$sums" || return 0 ;;
  esac
  command -v tshark >/dev/null 2>&1 || return 0
  tshark_crcs "$f" >"$base.tshark-crcs"
  if [ -s "$base.tshark-crcs" ] && ! awk '$3 ~ /b/ { bad = 1 } END { exit !bad }' "$base.tshark-crcs"; then
    rm -f "$base.tshark-crcs"
    return 0
  fi
  tshark_tcp_events "$f" >"$base.tshark-tcp"
  classify_tshark_crcs "$base.tshark-crcs" "$base.tshark-tcp" "$base.decode"
}
