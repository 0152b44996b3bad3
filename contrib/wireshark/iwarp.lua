-- iwarp.lua: a Wireshark dissector for iWARP as the goiwarp project speaks it.
--
-- MPA (RFC 5044) startup frames with RFC 6581 IRD/ORD, peer-to-peer mode and
-- RTR types and the project's extension bits; FPDUs with ULPDU_Length, pad,
-- markers where negotiated and a CRC32c verdict where negotiated; DDP (RFC
-- 5041) tagged and untagged headers; RDMAP (RFC 5040) versions 1 and 2 with
-- the RFC 7306 messages (Atomic Request and Response, Immediate Data) and the
-- V2 draft's (draft-wood-storm-rdmap-ext-v2: Read V2 Request and Response,
-- the four Send with Immediate variants); Terminate with its attached
-- headers, in the RFC 5040 §4.8 layout or Linux siw's.
--
-- Load it with `tshark -X lua_script:iwarp.lua` (or `wireshark -X ...`), or
-- copy it into the personal Lua plugins folder (Help > About Wireshark >
-- Folders). Wireshark 4.0 or newer. Display filter fields start with
-- iwarp.mpa., iwarp.ddp. and iwarp.rdmap. (docs/decode.md in the goiwarp
-- repository lists them, with examples).
--
-- How it takes over a connection: a heuristic TCP dissector recognises the
-- MPA Request or Reply key at the start of a connection and makes this
-- dissector the connection's conversation dissector, which TCP tries before
-- any port or heuristic dissector; Wireshark tries heuristics registered
-- from Lua before the built-in ones, so the built-in iwarp_mpa heuristic
-- never sees these connections. TCP tries port dissectors before heuristics
-- unless tcp.try_heuristic_first is on: for MPA on a port another dissector
-- owns (7000 is Gryphon's), use `-o tcp.try_heuristic_first:TRUE` or Decode
-- As ("iwarp" in the TCP port table; `-d tcp.port==7000,iwarp`). Other TCP
-- traffic is left alone.
--
-- The byte layouts follow the project's codecs (internal/wire, internal/mpa,
-- internal/fpdu) and docs/spec/*.md; markers (RFC 5044 §4.3) sit at every
-- 512th octet of a direction's stream counted from the first octet after its
-- MPA frame, and the CRC covers every marker of the FPDU, one due where the
-- CRC field would start included (docs/fpdu.md, decision 2).

if set_plugin_info then
    set_plugin_info({
        version = "1.0.0",
        description = "iWARP MPA/DDP/RDMAP with RFC 7306 and the RDMAP V2 draft",
        repository = "github.com/goiwarp/iwarp (contrib/wireshark)",
    })
end

---------------------------------------------------------------------------
-- 32-bit operations (bit32 in Lua 5.2, native operators in 5.3 and later)
---------------------------------------------------------------------------

local band, bor, bxor, rshift
do
    local b32 = rawget(_G, "bit32")
    if b32 then
        band, bor, bxor, rshift = b32.band, b32.bor, b32.bxor, b32.rshift
    else
        band, bor, bxor, rshift = load([[
            return function(a, b) return math.floor(a) & math.floor(b) end,
                   function(a, b) return math.floor(a) | math.floor(b) end,
                   function(a, b) return math.floor(a) ~ math.floor(b) end,
                   function(a, n) return math.floor(a) >> n end]])()
    end
end

-- CRC-32C (Castagnoli, reflected, RFC 5044 §4.4 by way of RFC 3385).
local crc_table = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) ~= 0 then
            c = bxor(rshift(c, 1), 0x82F63B78)
        else
            c = rshift(c, 1)
        end
    end
    crc_table[i] = c
end

local function crc32c(s)
    local c, byte = 0xFFFFFFFF, string.byte
    for i = 1, #s do
        c = bxor(rshift(c, 8), crc_table[band(bxor(c, byte(s, i)), 0xFF)])
    end
    return bxor(c, 0xFFFFFFFF)
end
assert(crc32c("123456789") == 0xE3069283, "iwarp.lua: CRC32c self-test failed")

---------------------------------------------------------------------------
-- Protocol tables (internal/wire/optable.go, termcode.go)
---------------------------------------------------------------------------

local REQUEST_KEY, REPLY_KEY = "MPA ID Req Frame", "MPA ID Rep Frame"
local MPA_HDR, MAX_PD = 20, 512
local MARKER_INTERVAL, MARKER_LEN, CRC_LEN = 512, 4, 4
local TAGGED_HDR, UNTAGGED_HDR = 14, 18

-- Opcodes: name, buffer model, QN, RDMAP header, its length, the version
-- that defines it, Invalidate STag in the ULP field, last segment carrying
-- only the immediate data.
local OPS = {
    [0x00] = { name = "RDMA Write", tagged = true, hdr = "none" },
    [0x01] = { name = "RDMA Read Request", qn = 1, hdr = "readreq", hlen = 28 },
    [0x02] = { name = "RDMA Read Response", tagged = true, hdr = "none" },
    [0x03] = { name = "Send", qn = 0, hdr = "none" },
    [0x04] = { name = "Send with Invalidate", qn = 0, hdr = "none", inv = true },
    [0x05] = { name = "Send with SE", qn = 0, hdr = "none" },
    [0x06] = { name = "Send with SE and Invalidate", qn = 0, hdr = "none", inv = true },
    [0x07] = { name = "Terminate", qn = 2, hdr = "terminate", hlen = 4 },
    [0x08] = { name = "Immediate Data", qn = 0, hdr = "immediate", hlen = 8 },
    [0x09] = { name = "Immediate Data with SE", qn = 0, hdr = "immediate", hlen = 8 },
    [0x0A] = { name = "Atomic Request", qn = 1, hdr = "atomicreq", hlen = 52 },
    [0x0B] = { name = "Atomic Response", qn = 3, hdr = "atomicresp", hlen = 12 },
    [0x11] = { name = "RDMA Read V2 Request", qn = 1, hdr = "readv2req", hlen = 16, v2 = true },
    [0x12] = { name = "RDMA Read V2 Response", qn = 3, hdr = "none", v2 = true },
    [0x13] = { name = "Send with Immediate", qn = 0, hdr = "none", v2 = true, immlast = true },
    [0x14] = { name = "Send with Invalidate and Immediate", qn = 0, hdr = "none", v2 = true, immlast = true, inv = true },
    [0x15] = { name = "Send with SE and Immediate", qn = 0, hdr = "none", v2 = true, immlast = true },
    [0x16] = { name = "Send with Invalidate, SE and Immediate", qn = 0, hdr = "none", v2 = true, immlast = true, inv = true },
}

local op_names = {}
for code, op in pairs(OPS) do
    op_names[code] = op.name
end

-- lookup_op returns the opcode's description if op is defined under RDMAP
-- version rv (wire.Opcode.Defined).
local function lookup_op(rv, op)
    local info = OPS[op]
    if not info or (rv ~= 1 and rv ~= 2) or (info.v2 and rv ~= 2) then
        return nil
    end
    return info
end

local LAYERS = { [0] = "RDMAP", [1] = "DDP", [2] = "LLP" }

local TYPE_NAMES = {
    [0] = { [0] = "local catastrophic", [1] = "remote protection", [2] = "remote operation" },
    [1] = { [0] = "local catastrophic", [1] = "tagged buffer", [2] = "untagged buffer" },
    [2] = { [0] = "MPA" },
}

-- Terminate codes of RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §9.
local TERM_CODES = {}
local function term_key(layer, etype, code) return layer * 65536 + etype * 256 + code end
for _, c in ipairs({
    { 0, 0, 0x00, "local catastrophic error" },
    { 0, 1, 0x00, "invalid STag" },
    { 0, 1, 0x01, "base or bounds violation" },
    { 0, 1, 0x02, "access rights violation" },
    { 0, 1, 0x03, "STag not associated with RDMAP stream" },
    { 0, 1, 0x04, "TO wrap" },
    { 0, 1, 0x09, "STag cannot be invalidated" },
    { 0, 1, 0xFF, "unspecified remote protection error" },
    { 0, 2, 0x05, "invalid RDMAP version" },
    { 0, 2, 0x06, "unexpected opcode" },
    { 0, 2, 0x07, "catastrophic error, localized to RDMAP stream" },
    { 0, 2, 0x08, "catastrophic error, global" },
    { 0, 2, 0x09, "STag cannot be invalidated" },
    { 0, 2, 0xFF, "unspecified remote operation error" },
    { 1, 0, 0x00, "local catastrophic error" },
    { 1, 1, 0x00, "invalid STag" },
    { 1, 1, 0x01, "base or bounds violation" },
    { 1, 1, 0x02, "STag not associated with DDP stream" },
    { 1, 1, 0x03, "TO wrap" },
    { 1, 1, 0x04, "invalid DDP version" },
    { 1, 2, 0x01, "invalid QN" },
    { 1, 2, 0x02, "invalid MSN: no buffer available" },
    { 1, 2, 0x03, "invalid MSN: MSN out of range" },
    { 1, 2, 0x04, "invalid MO" },
    { 1, 2, 0x05, "DDP message too long for the available buffer" },
    { 1, 2, 0x06, "invalid DDP version" },
    { 2, 0, 0x01, "TCP connection closed, terminated or lost" },
    { 2, 0, 0x02, "received MPA CRC does not match" },
    { 2, 0, 0x03, "marker and ULPDU_Length / FPDU start mismatch" },
    { 2, 0, 0x04, "invalid MPA Request or Reply frame" },
    { 2, 0, 0x05, "local catastrophic error" },
    { 2, 0, 0x06, "insufficient IRD resources" },
    { 2, 0, 0x07, "no matching RTR model" },
}) do
    TERM_CODES[term_key(c[1], c[2], c[3])] = c[4]
end

local function term_name(layer, etype, code)
    return TERM_CODES[term_key(layer, etype, code)]
end

local function term_type_name(layer, etype)
    local t = TYPE_NAMES[layer]
    return (t and t[etype]) or ("type " .. etype)
end

local function term_string(layer, etype, code)
    return string.format("%s/%d/0x%02X (%s)", LAYERS[layer] or ("layer " .. layer), etype, code,
        term_name(layer, etype, code) or "unknown code")
end

-- siw_sends_bare: the codes Linux siw sends with no flag set and nothing
-- attached (wire.siwSendsBare).
local function siw_sends_bare(layer, etype, code)
    if layer == 0 then
        return etype == 0 or (etype == 2 and (code == 0x05 or code == 0x06))
    elseif layer == 1 then
        return (etype == 1 and code == 0x04) or (etype == 2 and code == 0x06)
    elseif layer == 2 then
        return etype == 0 and (code == 0x02 or code == 0x03 or code == 0x04 or code == 0x06 or code == 0x07)
    end
    return false
end

-- read_term_control reads the 4 Terminate Control octets in one layout:
-- "rfc" (RFC 5040 §4.8) or "siw" (Linux siw's little-endian bitfields,
-- docs/spec/interop.md).
local function read_term_control(c, layout)
    local r = { layout = layout }
    if layout == "siw" then
        r.layer, r.etype = band(c[1], 0x0F), rshift(c[1], 4)
        r.m, r.d, r.r = band(c[3], 0x01) ~= 0, band(c[3], 0x02) ~= 0, band(c[3], 0x04) ~= 0
        r.reserved = band(c[3], 0xF8) ~= 0 or c[4] ~= 0
    else
        r.layer, r.etype = rshift(c[1], 4), band(c[1], 0x0F)
        r.m, r.d, r.r = band(c[3], 0x80) ~= 0, band(c[3], 0x40) ~= 0, band(c[3], 0x20) ~= 0
        r.reserved = band(c[3], 0x1F) ~= 0 or c[4] ~= 0
    end
    r.code = c[2]
    r.known = term_name(r.layer, r.etype, r.code) ~= nil
    r.clean = r.known and not r.reserved
    return r
end

-- decode_term_control picks the layout of a Terminate Control field as
-- internal/wire/termlayout.go does: a clean reading (a code of the tables,
-- no reserved bit set) over one that is not; both clean and different: siw's
-- if it is a code siw sends bare, else the RFC's, marked ambiguous; neither
-- clean: the one whose code is known, RFC first.
local function decode_term_control(c)
    local rfc, siw = read_term_control(c, "rfc"), read_term_control(c, "siw")
    if rfc.clean and siw.clean then
        if rfc.layer == siw.layer and rfc.etype == siw.etype and rfc.code == siw.code then
            return rfc, false
        end
        if siw_sends_bare(siw.layer, siw.etype, siw.code) then
            return siw, true
        end
        return rfc, true
    elseif rfc.clean then
        return rfc, false
    elseif siw.clean then
        return siw, false
    elseif rfc.known then
        return rfc, false
    elseif siw.known then
        return siw, false
    end
    return rfc, false
end

local EXT_NAMES = { [0] = "none", [2] = "RFC7306", [3] = "RFC7306+V2" }

-- ext_normalize: the extension set two reserved bits mean (mpa.Ext.Normalize:
-- V2 without RFC 7306 is neither).
local function ext_normalize(flags)
    local e = band(flags, 0x03)
    if band(e, 0x01) ~= 0 and band(e, 0x02) == 0 then
        return 0
    end
    return e
end

local function rtr_string(b, c, d)
    local t = {}
    if c then t[#t + 1] = "Write" end
    if d then t[#t + 1] = "Read" end
    if b then t[#t + 1] = "Send" end
    if #t == 0 then return "none" end
    return table.concat(t, "|")
end

---------------------------------------------------------------------------
-- Protocol, fields and expert infos
---------------------------------------------------------------------------

local iwarp = Proto("iwarp", "iWARP (MPA, DDP, RDMAP with RFC 7306 and V2)")

local F = {}
local function field(name, f)
    F[name] = f
end

-- Direction and MPA startup frames.
field("direction", ProtoField.string("iwarp.direction", "Direction", base.ASCII,
    "I>R: from the MPA Initiator to the Responder; R>I: back"))
field("mpa_request", ProtoField.none("iwarp.mpa.request", "MPA Request"))
field("mpa_reply", ProtoField.none("iwarp.mpa.reply", "MPA Reply"))
field("mpa_key", ProtoField.string("iwarp.mpa.key", "Key"))
field("mpa_flags", ProtoField.uint8("iwarp.mpa.flags", "Flags", base.HEX))
field("mpa_flag_m", ProtoField.bool("iwarp.mpa.flags.m", "M (send me markers)", 8, nil, 0x80))
field("mpa_flag_c", ProtoField.bool("iwarp.mpa.flags.c", "C (CRC)", 8, nil, 0x40))
field("mpa_flag_r", ProtoField.bool("iwarp.mpa.flags.r", "R (reject)", 8, nil, 0x20))
field("mpa_flag_h", ProtoField.bool("iwarp.mpa.flags.h", "H (RFC 6581 IRD/ORD block)", 8, nil, 0x10))
field("mpa_flag_res", ProtoField.uint8("iwarp.mpa.flags.res", "Res", base.HEX, nil, 0x0F))
field("mpa_flag_probe", ProtoField.bool("iwarp.mpa.flags.echo_probe", "Echo probe (0x08, goiwarp)", 8, nil, 0x08))
field("mpa_flag_rsv4", ProtoField.bool("iwarp.mpa.flags.res_0x04", "Reserved 0x04", 8, nil, 0x04))
field("mpa_flag_7306", ProtoField.bool("iwarp.mpa.flags.ext_rfc7306", "Extension RFC 7306 (0x02, goiwarp)", 8, nil, 0x02))
field("mpa_flag_v2", ProtoField.bool("iwarp.mpa.flags.ext_v2", "Extension RDMAP V2 (0x01, goiwarp)", 8, nil, 0x01))
field("mpa_rev", ProtoField.uint8("iwarp.mpa.rev", "Rev", base.DEC))
field("mpa_pd_length", ProtoField.uint16("iwarp.mpa.pd_length", "PD_Length", base.DEC))
field("mpa_irdord", ProtoField.none("iwarp.mpa.irdord", "RFC 6581 IRD/ORD"))
field("mpa_p2p", ProtoField.bool("iwarp.mpa.p2p", "A (peer-to-peer mode)", 16, nil, 0x8000))
field("mpa_rtr_send", ProtoField.bool("iwarp.mpa.rtr_send", "B (zero-length Send RTR)", 16, nil, 0x4000))
field("mpa_ird", ProtoField.uint16("iwarp.mpa.ird", "IRD", base.DEC, nil, 0x3FFF))
field("mpa_rtr_write", ProtoField.bool("iwarp.mpa.rtr_write", "C (zero-length Write RTR)", 16, nil, 0x8000))
field("mpa_rtr_read", ProtoField.bool("iwarp.mpa.rtr_read", "D (zero-length Read RTR)", 16, nil, 0x4000))
field("mpa_ord", ProtoField.uint16("iwarp.mpa.ord", "ORD", base.DEC, nil, 0x3FFF))
field("mpa_private", ProtoField.bytes("iwarp.mpa.private_data", "Private data"))
field("agreed_crc", ProtoField.bool("iwarp.mpa.agreed.crc", "CRC in use"))
field("agreed_markers_i2r", ProtoField.bool("iwarp.mpa.agreed.markers_i2r", "Markers from Initiator to Responder"))
field("agreed_markers_r2i", ProtoField.bool("iwarp.mpa.agreed.markers_r2i", "Markers from Responder to Initiator"))
field("agreed_ext", ProtoField.uint8("iwarp.mpa.agreed.ext", "Extensions agreed", base.HEX, EXT_NAMES))
field("agreed_rv", ProtoField.uint8("iwarp.mpa.agreed.rdmap_version", "RDMAP version in use", base.DEC))
field("agreed_rtr", ProtoField.string("iwarp.mpa.agreed.rtr", "RTR type chosen"))

-- FPDU.
field("fpdu", ProtoField.none("iwarp.mpa.fpdu", "MPA FPDU"))
field("ulpdu_length", ProtoField.uint16("iwarp.mpa.ulpdu_length", "ULPDU_Length", base.DEC))
field("pad", ProtoField.bytes("iwarp.mpa.pad", "Pad"))
field("markers", ProtoField.uint16("iwarp.mpa.markers", "Markers in this FPDU", base.DEC))
field("marker", ProtoField.bytes("iwarp.mpa.marker", "Marker"))
field("marker_reserved", ProtoField.uint16("iwarp.mpa.marker.reserved", "Reserved", base.HEX))
field("marker_fpduptr", ProtoField.uint16("iwarp.mpa.marker.fpduptr", "FPDUPTR", base.DEC))
field("marker_expected", ProtoField.uint16("iwarp.mpa.marker.expected", "FPDUPTR expected", base.DEC))
field("crc", ProtoField.uint32("iwarp.mpa.crc", "CRC32c", base.HEX))
field("crc_computed", ProtoField.uint32("iwarp.mpa.crc.computed", "CRC32c computed", base.HEX))
field("crc_status", ProtoField.uint8("iwarp.mpa.crc.status", "CRC status", base.DEC,
    { [0] = "Bad", [1] = "Good", [2] = "Unverified (CRC not in use)" }))
field("rtr", ProtoField.string("iwarp.mpa.rtr", "P2P ready-to-receive message"))

-- DDP (RFC 5041 §5).
field("ddp", ProtoField.none("iwarp.ddp", "DDP"))
field("ddp_control", ProtoField.uint8("iwarp.ddp.control", "DDP control", base.HEX))
field("ddp_t", ProtoField.bool("iwarp.ddp.t", "T (tagged)", 8, nil, 0x80))
field("ddp_l", ProtoField.bool("iwarp.ddp.l", "L (last segment)", 8, nil, 0x40))
field("ddp_rsvd", ProtoField.uint8("iwarp.ddp.rsvd", "Reserved", base.HEX, nil, 0x3C))
field("ddp_dv", ProtoField.uint8("iwarp.ddp.dv", "DV (DDP version)", base.DEC, nil, 0x03))
field("ddp_stag", ProtoField.uint32("iwarp.ddp.stag", "STag", base.HEX))
field("ddp_to", ProtoField.uint64("iwarp.ddp.to", "Tagged offset", base.HEX))
field("ddp_ulp", ProtoField.uint32("iwarp.ddp.ulp", "ULP field", base.HEX))
field("ddp_qn", ProtoField.uint32("iwarp.ddp.qn", "QN", base.DEC))
field("ddp_msn", ProtoField.uint32("iwarp.ddp.msn", "MSN", base.DEC))
field("ddp_mo", ProtoField.uint32("iwarp.ddp.mo", "MO", base.DEC))

-- RDMAP (RFC 5040 §4, RFC 7306 §5-6, V2 draft §4).
field("rdmap", ProtoField.none("iwarp.rdmap", "RDMAP"))
field("rdmap_control", ProtoField.uint8("iwarp.rdmap.control", "RDMAP control", base.HEX))
field("rdmap_rv", ProtoField.uint8("iwarp.rdmap.rv", "RV (RDMAP version)", base.DEC, nil, 0xC0))
field("rdmap_rsvd", ProtoField.uint8("iwarp.rdmap.rsvd", "Reserved", base.HEX))
field("rdmap_opcode", ProtoField.uint8("iwarp.rdmap.opcode", "Opcode", base.HEX, op_names))
field("inv_stag", ProtoField.uint32("iwarp.rdmap.inv_stag", "Invalidate STag", base.HEX))
field("sink_stag", ProtoField.uint32("iwarp.rdmap.sink_stag", "Data Sink STag", base.HEX))
field("sink_to", ProtoField.uint64("iwarp.rdmap.sink_to", "Data Sink Tagged Offset", base.HEX))
field("rdmardsz", ProtoField.uint32("iwarp.rdmap.rdmardsz", "RDMA Read Message Size", base.DEC))
field("src_stag", ProtoField.uint32("iwarp.rdmap.src_stag", "Data Source STag", base.HEX))
field("src_to", ProtoField.uint64("iwarp.rdmap.src_to", "Data Source Tagged Offset", base.HEX))
field("aopcode", ProtoField.uint32("iwarp.rdmap.atomic.aopcode", "AOpCode", base.HEX,
    { [0] = "FetchAdd", [2] = "CmpSwap" }, 0x0000000F))
field("atomic_rsvd", ProtoField.uint32("iwarp.rdmap.atomic.reserved", "Reserved", base.HEX, nil, 0xFFFFFFF0))
field("request_id", ProtoField.uint32("iwarp.rdmap.atomic.request_id", "Request Identifier", base.HEX))
field("atomic_stag", ProtoField.uint32("iwarp.rdmap.atomic.stag", "Remote STag", base.HEX))
field("atomic_to", ProtoField.uint64("iwarp.rdmap.atomic.to", "Remote Tagged Offset", base.HEX))
field("add_data", ProtoField.uint64("iwarp.rdmap.atomic.add_data", "Add Data", base.HEX))
field("add_mask", ProtoField.uint64("iwarp.rdmap.atomic.add_mask", "Add Mask", base.HEX))
field("swap_data", ProtoField.uint64("iwarp.rdmap.atomic.swap_data", "Swap Data", base.HEX))
field("swap_mask", ProtoField.uint64("iwarp.rdmap.atomic.swap_mask", "Swap Mask", base.HEX))
field("compare_data", ProtoField.uint64("iwarp.rdmap.atomic.compare_data", "Compare Data", base.HEX))
field("compare_mask", ProtoField.uint64("iwarp.rdmap.atomic.compare_mask", "Compare Mask", base.HEX))
field("orig_request_id", ProtoField.uint32("iwarp.rdmap.atomic.orig_request_id", "Original Request Identifier", base.HEX))
field("orig_value", ProtoField.uint64("iwarp.rdmap.atomic.orig_value", "Original Remote Data Value", base.HEX))
field("immediate", ProtoField.bytes("iwarp.rdmap.immediate", "Immediate Data"))
field("payload", ProtoField.bytes("iwarp.rdmap.payload", "Payload"))
field("payload_length", ProtoField.uint32("iwarp.rdmap.payload_length", "Payload length", base.DEC))

-- Terminate (RFC 5040 §4.8; siw's layout, docs/spec/interop.md).
field("term", ProtoField.none("iwarp.rdmap.term", "Terminate"))
field("term_control", ProtoField.bytes("iwarp.rdmap.term.control", "Terminate Control"))
field("term_layout", ProtoField.uint8("iwarp.rdmap.term.layout", "Control layout", base.DEC,
    { [0] = "RFC 5040", [1] = "Linux siw (nibbles swapped, flags in the low bits)" }))
field("term_ambiguous", ProtoField.bool("iwarp.rdmap.term.ambiguous", "Both layouts read as valid codes"))
field("term_layer", ProtoField.uint8("iwarp.rdmap.term.layer", "Layer", base.DEC, LAYERS))
field("term_etype", ProtoField.uint8("iwarp.rdmap.term.etype", "Error Type", base.DEC))
field("term_code", ProtoField.uint8("iwarp.rdmap.term.code", "Error Code", base.HEX))
field("term_error", ProtoField.string("iwarp.rdmap.term.error", "Error"))
field("term_m", ProtoField.bool("iwarp.rdmap.term.m", "M (DDP Segment Length valid)"))
field("term_d", ProtoField.bool("iwarp.rdmap.term.d", "D (DDP header included)"))
field("term_r", ProtoField.bool("iwarp.rdmap.term.r", "R (RDMA header included)"))
field("term_seglen", ProtoField.uint16("iwarp.rdmap.term.ddp_seg_len", "DDP Segment Length", base.DEC))
field("term_ddp", ProtoField.bytes("iwarp.rdmap.term.ddp_header", "Terminated DDP header"))
field("term_ddp_t", ProtoField.bool("iwarp.rdmap.term.ddp.t", "T (tagged)", 8, nil, 0x80))
field("term_ddp_l", ProtoField.bool("iwarp.rdmap.term.ddp.l", "L (last segment)", 8, nil, 0x40))
field("term_ddp_dv", ProtoField.uint8("iwarp.rdmap.term.ddp.dv", "DV", base.DEC, nil, 0x03))
field("term_ddp_rv", ProtoField.uint8("iwarp.rdmap.term.ddp.rv", "RV", base.DEC, nil, 0xC0))
field("term_ddp_opcode", ProtoField.uint8("iwarp.rdmap.term.ddp.opcode", "Opcode", base.HEX, op_names))
field("term_ddp_stag", ProtoField.uint32("iwarp.rdmap.term.ddp.stag", "STag", base.HEX))
field("term_ddp_to", ProtoField.uint64("iwarp.rdmap.term.ddp.to", "Tagged offset", base.HEX))
field("term_ddp_ulp", ProtoField.uint32("iwarp.rdmap.term.ddp.ulp", "ULP field", base.HEX))
field("term_ddp_qn", ProtoField.uint32("iwarp.rdmap.term.ddp.qn", "QN", base.DEC))
field("term_ddp_msn", ProtoField.uint32("iwarp.rdmap.term.ddp.msn", "MSN", base.DEC))
field("term_ddp_mo", ProtoField.uint32("iwarp.rdmap.term.ddp.mo", "MO", base.DEC))
field("term_rdma", ProtoField.bytes("iwarp.rdmap.term.rdma_header", "Terminated RDMA header"))
field("term_rdma_sink_stag", ProtoField.uint32("iwarp.rdmap.term.rdma.sink_stag", "Data Sink STag", base.HEX))
field("term_rdma_sink_to", ProtoField.uint64("iwarp.rdmap.term.rdma.sink_to", "Data Sink Tagged Offset", base.HEX))
field("term_rdma_rdmardsz", ProtoField.uint32("iwarp.rdmap.term.rdma.rdmardsz", "RDMA Read Message Size", base.DEC))
field("term_rdma_src_stag", ProtoField.uint32("iwarp.rdmap.term.rdma.src_stag", "Data Source STag", base.HEX))
field("term_rdma_src_to", ProtoField.uint64("iwarp.rdmap.term.rdma.src_to", "Data Source Tagged Offset", base.HEX))

local field_list = {}
for _, f in pairs(F) do
    field_list[#field_list + 1] = f
end
iwarp.fields = field_list

local E = {
    mpa_frame = ProtoExpert.new("iwarp.expert.mpa_frame", "Invalid MPA Request or Reply",
        expert.group.MALFORMED, expert.severity.ERROR),
    reject = ProtoExpert.new("iwarp.expert.reject", "Connection rejected by the Responder (R)",
        expert.group.SEQUENCE, expert.severity.WARN),
    ext = ProtoExpert.new("iwarp.expert.ext", "Extension negotiation",
        expert.group.PROTOCOL, expert.severity.NOTE),
    crc = ProtoExpert.new("iwarp.expert.crc_bad", "Bad CRC32c",
        expert.group.CHECKSUM, expert.severity.ERROR),
    marker = ProtoExpert.new("iwarp.expert.marker_bad", "Marker FPDUPTR does not point at the FPDU",
        expert.group.PROTOCOL, expert.severity.ERROR),
    marker_reserved = ProtoExpert.new("iwarp.expert.marker_reserved", "Marker bits a sender leaves zero are set",
        expert.group.PROTOCOL, expert.severity.NOTE),
    ulpdu_length = ProtoExpert.new("iwarp.expert.ulpdu_length", "ULPDU_Length below the 14-octet DDP header",
        expert.group.MALFORMED, expert.severity.ERROR),
    parse = ProtoExpert.new("iwarp.expert.parse", "DDP segment does not parse",
        expert.group.MALFORMED, expert.severity.ERROR),
    check = ProtoExpert.new("iwarp.expert.check", "DDP segment a receiver rejects",
        expert.group.PROTOCOL, expert.severity.ERROR),
    liberal = ProtoExpert.new("iwarp.expert.not_negotiated", "RFC 7306 message without negotiation (received liberally)",
        expert.group.PROTOCOL, expert.severity.NOTE),
    rtr = ProtoExpert.new("iwarp.expert.rtr", "P2P ready-to-receive message",
        expert.group.SEQUENCE, expert.severity.CHAT),
    terminate = ProtoExpert.new("iwarp.expert.terminate", "Terminate",
        expert.group.RESPONSE_CODE, expert.severity.WARN),
}
iwarp.experts = { E.mpa_frame, E.reject, E.ext, E.crc, E.marker, E.marker_reserved, E.ulpdu_length,
    E.parse, E.check, E.liberal, E.rtr, E.terminate }

---------------------------------------------------------------------------
-- Connection state
---------------------------------------------------------------------------

local f_seq = Field.new("tcp.seq")
local f_seq_raw = Field.new("tcp.seq_raw")

-- last_value returns the value of the innermost instance of a field, or
-- nil: Wireshark fills field extractors only when it builds a tree, which
-- the first pass of `tshark -2` and of the GUI need not do.
local function last_value(f)
    local all = { f() }
    local fi = all[#all]
    return fi and fi.value
end

-- conns holds, per pair of TCP endpoints, the connection the first pass
-- (pinfo.visited false) is dissecting: its MPA frames, the settings they
-- agreed, and per direction where its MPA frame and FPDUs start, as stream
-- positions counted from the first octet of the direction handed to this
-- dissector. frames records, per frame number, the connection and direction
-- and the stream position of the data TCP handed over (a: a part of the
-- segment; b: reassembled data), so that later passes (and Wireshark's
-- re-dissection of a selected packet) see what the first pass saw. heur
-- records the heuristic's verdicts.
local conns, frames, heur

local function reset()
    conns, frames, heur = {}, {}, {}
end
reset()
iwarp.init = reset

local function endpoint(addr, port) return tostring(addr) .. ":" .. port end

local function conn_key(pinfo)
    local a, b = endpoint(pinfo.src, pinfo.src_port), endpoint(pinfo.dst, pinfo.dst_port)
    if a > b then a, b = b, a end
    return a .. "|" .. b
end

-- new_conn starts the state of a connection of the current packet's
-- endpoints (a TCP connection that reuses them gets a new one).
local function new_conn(pinfo)
    local c = { dirs = {}, crc = "unknown" }
    conns[conn_key(pinfo)] = c
    return c
end

-- dir_state returns the state of the current packet's direction of c.
local function dir_state(c, pinfo)
    local src = endpoint(pinfo.src, pinfo.src_port)
    local d = c.dirs[src]
    if not d then
        d = { key = src }
        c.dirs[src] = d
    end
    if d.pos == nil then
        d.pos, d.peer = 0, endpoint(pinfo.dst, pinfo.dst_port)
    end
    return d
end

-- settings derives what the captured startup frames agreed (RFC 5044 §7.1,
-- RFC 6581, docs/spec/extensions.md §3), as internal/decode does.
local function settings(c)
    local req, rep = c.req, c.rep
    local ini = c.initiator
    local function set_markers(who, on)
        if who then
            c.dirs[who] = c.dirs[who] or { key = who }
            c.dirs[who].markers = on
        end
    end
    c.notes = {}
    if req and rep then
        c.startup = true
        c.crc = (req.c or rep.c) and "on" or "off"
        -- M asks the peer to put markers into what it sends.
        set_markers(ini, rep.m)
        set_markers(c.responder, req.m)
        c.rejected = rep.r
        c.rtr = (rep.irdord and rep.irdord.p2p) and rep.irdord.rtr or nil
        local offered, answered = ext_normalize(req.flags), ext_normalize(rep.flags)
        c.ext = 0
        if band(answered, bxor(offered, 0xFF)) ~= 0 then
            c.notes[#c.notes + 1] = "Reply claims extension bits the Request did not offer: protocol error, extensions taken as none"
        elseif band(req.flags, 0x08) ~= 0 and band(rep.flags, 0x08) ~= 0 then
            c.notes[#c.notes + 1] = "Reply repeats the Request's echo probe (0x08): the Responder copies reserved bits (Linux siw), so its extension bits are an echo: extensions taken as none"
        else
            c.ext = answered
        end
        c.rv = band(c.ext, 0x01) ~= 0 and 2 or 1
    elseif req then
        c.crc = req.c and "on" or "unknown"
        set_markers(c.responder, req.m)
    elseif rep then
        c.crc = rep.c and "on" or "unknown"
        set_markers(ini, rep.m)
    end
end

---------------------------------------------------------------------------
-- MPA Request and Reply (RFC 5044 §7.1, RFC 6581 §5)
---------------------------------------------------------------------------

-- dissect_mpa_frame dissects the MPA frame at off, at stream position pos;
-- it returns the octets used (or minus the octets still missing) and an
-- Info summary.
local function dissect_mpa_frame(tvb, off, pinfo, tree, c, d, pos)
    local avail = tvb:reported_length_remaining(off)
    if avail < MPA_HDR then
        return -(MPA_HDR - avail)
    end
    local key = tvb:raw(off, 16)
    local flags = tvb(off + 16, 1):uint()
    local rev = tvb(off + 17, 1):uint()
    local pd = tvb(off + 18, 2):uint()
    local reply = key == REPLY_KEY
    local err
    if key ~= REQUEST_KEY and key ~= REPLY_KEY then
        err = "bad key"
    elseif rev ~= 1 and rev ~= 2 then
        err = "unknown Rev " .. rev
    elseif pd > MAX_PD then
        err = "PD_Length " .. pd .. " over 512"
    elseif rev == 2 and band(flags, 0x10) ~= 0 and pd < 4 then
        err = "Rev 2 with H but no room for the IRD/ORD block"
    end
    local size = MPA_HDR + ((pd <= MAX_PD) and pd or 0)
    if avail < size then
        return -(size - avail)
    end

    local enhanced = not err and rev == 2 and band(flags, 0x10) ~= 0
    local frame = { c = band(flags, 0x40) ~= 0, m = band(flags, 0x80) ~= 0, r = band(flags, 0x20) ~= 0, flags = flags, rev = rev }
    if enhanced then
        local ird, ord = tvb(off + 20, 2):uint(), tvb(off + 22, 2):uint()
        frame.irdord = {
            p2p = band(ird, 0x8000) ~= 0,
            ird = band(ird, 0x3FFF), ord = band(ord, 0x3FFF),
            rtr = rtr_string(band(ird, 0x4000) ~= 0, band(ord, 0x8000) ~= 0, band(ord, 0x4000) ~= 0),
        }
    end
    if not pinfo.visited then
        d.base = pos + size -- the FPDUs, and their markers, start here
        if not err then
            if reply then
                c.rep = frame
                c.initiator = c.initiator or d.peer
                c.responder = c.responder or d.key
            else
                c.req = frame
                c.initiator, c.responder = d.key, d.peer
            end
            settings(c)
        end
    end

    local name = reply and "MPA Reply" or "MPA Request"
    if err then
        name = "MPA frame"
    end
    local pitem = tree:add(iwarp, tvb(off, size))
    local t = pitem:add(reply and F.mpa_reply or F.mpa_request, tvb(off, size))
    t:add(F.mpa_key, tvb(off, 16))
    local ft = t:add(F.mpa_flags, tvb(off + 16, 1))
    for _, n in ipairs({ "mpa_flag_m", "mpa_flag_c", "mpa_flag_r", "mpa_flag_h", "mpa_flag_res",
        "mpa_flag_probe", "mpa_flag_rsv4", "mpa_flag_7306", "mpa_flag_v2" }) do
        ft:add(F[n], tvb(off + 16, 1))
    end
    t:add(F.mpa_rev, tvb(off + 17, 1))
    t:add(F.mpa_pd_length, tvb(off + 18, 2))
    local pdoff = off + MPA_HDR
    if enhanced then
        local it = t:add(F.mpa_irdord, tvb(pdoff, 4))
        it:add(F.mpa_p2p, tvb(pdoff, 2))
        it:add(F.mpa_rtr_send, tvb(pdoff, 2))
        it:add(F.mpa_ird, tvb(pdoff, 2))
        it:add(F.mpa_rtr_write, tvb(pdoff + 2, 2))
        it:add(F.mpa_rtr_read, tvb(pdoff + 2, 2))
        it:add(F.mpa_ord, tvb(pdoff + 2, 2))
        it:append_text(string.format(": IRD %d, ORD %d%s", frame.irdord.ird, frame.irdord.ord,
            frame.irdord.p2p and (", P2P, RTR " .. frame.irdord.rtr) or ""))
        pdoff = pdoff + 4
    end
    if size > pdoff - off then
        t:add(F.mpa_private, tvb(pdoff, size - (pdoff - off)))
    end
    local info = string.format("%s Rev %d", name, rev)
    local fl = {}
    if frame.m then fl[#fl + 1] = "M" end
    if frame.c then fl[#fl + 1] = "C" end
    if frame.r then fl[#fl + 1] = "R" end
    if band(flags, 0x10) ~= 0 then fl[#fl + 1] = "H" end
    if band(flags, 0x0F) ~= 0 then fl[#fl + 1] = string.format("Res=0x%x", band(flags, 0x0F)) end
    info = info .. " [" .. table.concat(fl, " ") .. "]"
    if frame.irdord then
        info = info .. string.format(" IRD=%d ORD=%d", frame.irdord.ird, frame.irdord.ord)
        if frame.irdord.p2p then
            info = info .. " P2P RTR=" .. frame.irdord.rtr
        end
    end
    if err then
        t:add_proto_expert_info(E.mpa_frame, "Invalid MPA Request or Reply: " .. err)
        info = info .. " (invalid: " .. err .. ")"
    elseif reply and c.startup then
        local g = {
            t:add(F.agreed_crc, c.crc == "on"),
            t:add(F.agreed_markers_i2r, c.dirs[c.initiator] and c.dirs[c.initiator].markers or false),
            t:add(F.agreed_markers_r2i, c.dirs[c.responder] and c.dirs[c.responder].markers or false),
            t:add(F.agreed_ext, c.ext),
            t:add(F.agreed_rv, c.rv),
        }
        if c.rtr then
            g[#g + 1] = t:add(F.agreed_rtr, c.rtr)
        end
        for _, it in ipairs(g) do it:set_generated() end
        for _, n in ipairs(c.notes) do
            t:add_proto_expert_info(E.ext, n)
        end
        if c.rejected then
            t:add_proto_expert_info(E.reject)
        end
    end
    local dir = (d.key == c.initiator and "I>R") or (d.key == c.responder and "R>I") or nil
    if dir then
        pitem:add(F.direction, dir):set_generated()
    end
    pitem:append_text(", " .. info)
    return size, info
end

---------------------------------------------------------------------------
-- FPDU framing (RFC 5044 §4; markers §4.3; CRC §4.4)
---------------------------------------------------------------------------

local function pad_len(ulen) return (4 - (2 + ulen) % 4) % 4 end

-- fpdu_layout places the markers of an FPDU whose first octet is phase
-- octets past a marker position (the stream offset counted from the first
-- octet after the MPA frame, modulo 512), with ULPDU_Length ulen. It
-- returns the markers' offsets in the FPDU, the pieces of the FPDU's content
-- (ULPDU_Length, ULPDU, pad) as { FPDU offset, content offset, length }, the
-- offset of the CRC field and the FPDU's size. A marker due where the CRC
-- field would start comes before it (docs/fpdu.md decision 2).
local function fpdu_layout(phase, ulen, markers)
    local content = 2 + ulen + pad_len(ulen)
    local marks, pieces = {}, {}
    local pos, done = 0, 0
    local nextm = markers and ((MARKER_INTERVAL - phase) % MARKER_INTERVAL) or math.huge
    while true do
        if pos == nextm then
            marks[#marks + 1] = pos
            pos = pos + MARKER_LEN
            nextm = nextm + MARKER_INTERVAL
        elseif done == content then
            break
        else
            local n = math.min(content - done, nextm - pos)
            pieces[#pieces + 1] = { pos, done, n }
            pos, done = pos + n, done + n
        end
    end
    return marks, pieces, pos, pos + CRC_LEN
end

-- content_tvb returns the content octets [from, from+n) of the FPDU at off
-- as a Tvb: a subset of tvb when no marker falls inside, else a new one.
local function content_tvb(tvb, off, pieces, from, n, label)
    local parts = {}
    for _, p in ipairs(pieces) do
        local lo, hi = math.max(from, p[2]), math.min(from + n, p[2] + p[3])
        if lo < hi then
            parts[#parts + 1] = { off + p[1] + (lo - p[2]), hi - lo }
        end
    end
    if #parts == 1 then
        return tvb(parts[1][1], parts[1][2]):tvb()
    end
    local ba = ByteArray.new()
    for _, p in ipairs(parts) do
        ba:append(tvb(p[1], p[2]):bytes())
    end
    return ba:tvb(label)
end

---------------------------------------------------------------------------
-- DDP and RDMAP (internal/wire: ParseULPDU, ValidateDDPHeader)
---------------------------------------------------------------------------

local function hex32(v) return string.format("0x%08x", v) end

-- add_u64 adds a 64-bit field and returns its hex digits.
local function add_u64(t, f, r)
    t:add(f, r)
    return "0x" .. r:uint64():tohex():lower()
end

-- dissect_terminate dissects a Terminate header (wire.ParseTerminate); it
-- returns a summary and an error text if the attached headers are bad.
local function dissect_terminate(u, hoff, t)
    local n = u:len() - hoff
    local tt = t:add(F.term, u(hoff, n))
    if n < 4 then
        return "Terminate", "Terminate shorter than its control field"
    end
    local c = { u(hoff, 1):uint(), u(hoff + 1, 1):uint(), u(hoff + 2, 1):uint(), u(hoff + 3, 1):uint() }
    local r, ambiguous = decode_term_control(c)
    local ct = tt:add(F.term_control, u(hoff, 4))
    ct:add(F.term_layout, u(hoff, 4), r.layout == "siw" and 1 or 0):set_generated()
    if ambiguous then
        ct:add(F.term_ambiguous, u(hoff, 4), true):set_generated()
    end
    ct:add(F.term_layer, u(hoff, 1), r.layer)
    ct:add(F.term_etype, u(hoff, 1), r.etype):append_text(" (" .. term_type_name(r.layer, r.etype) .. ")")
    ct:add(F.term_code, u(hoff + 1, 1), r.code)
    ct:add(F.term_m, u(hoff + 2, 1), r.m)
    ct:add(F.term_d, u(hoff + 2, 1), r.d)
    ct:add(F.term_r, u(hoff + 2, 1), r.r)
    local err_text = term_string(r.layer, r.etype, r.code)
    tt:add(F.term_error, u(hoff, 4), err_text):set_generated()
    local summary = "Terminate " .. err_text
    if r.layout == "siw" then
        summary = summary .. " [siw layout]"
    end
    tt:add_proto_expert_info(E.terminate, "Terminate: " .. err_text)
    local rest = hoff + 4
    n = u:len() - rest
    if n == 0 then
        return summary
    end
    if n < 2 then
        return summary, "Terminate's attached headers do not fit its length"
    end
    tt:add(F.term_seglen, u(rest, 2))
    rest, n = rest + 2, n - 2
    if n == 0 then
        return summary
    end
    local tagged = band(u(rest, 1):uint(), 0x80) ~= 0
    local dl = tagged and TAGGED_HDR or UNTAGGED_HDR
    if n ~= dl and n ~= dl + 28 then
        tt:add(F.term_ddp, u(rest, n))
        return summary, "Terminate's attached headers do not fit its length"
    end
    local dt = tt:add(F.term_ddp, u(rest, dl))
    dt:add(F.term_ddp_t, u(rest, 1))
    dt:add(F.term_ddp_l, u(rest, 1))
    dt:add(F.term_ddp_dv, u(rest, 1))
    local ctl = u(rest + 1, 1):uint()
    local rv = rshift(ctl, 6)
    dt:add(F.term_ddp_rv, u(rest + 1, 1))
    dt:add(F.term_ddp_opcode, u(rest + 1, 1), rv == 2 and band(ctl, 0x1F) or band(ctl, 0x0F))
    if tagged then
        dt:add(F.term_ddp_stag, u(rest + 2, 4))
        dt:add(F.term_ddp_to, u(rest + 6, 8))
    else
        dt:add(F.term_ddp_ulp, u(rest + 2, 4))
        dt:add(F.term_ddp_qn, u(rest + 6, 4))
        dt:add(F.term_ddp_msn, u(rest + 10, 4))
        dt:add(F.term_ddp_mo, u(rest + 14, 4))
    end
    if n == dl + 28 then
        local o = rest + dl
        local rt = tt:add(F.term_rdma, u(o, 28))
        rt:add(F.term_rdma_sink_stag, u(o, 4))
        rt:add(F.term_rdma_sink_to, u(o + 4, 8))
        rt:add(F.term_rdma_rdmardsz, u(o + 12, 4))
        rt:add(F.term_rdma_src_stag, u(o + 16, 4))
        rt:add(F.term_rdma_src_to, u(o + 20, 8))
    end
    return summary
end

-- dissect_ulpdu dissects one DDP segment u (the ULPDU without markers) under
-- the FPDU's tree t. It returns a summary for the Info column, a parse
-- error text (wire.ParseULPDU), and a check error text
-- (wire.ValidateDDPHeader under the agreed RDMAP version).
local function dissect_ulpdu(u, t, c)
    local n = u:len()
    if n < 2 then
        return "DDP segment", "ULPDU shorter than its DDP header"
    end
    local c0, ctl = u(0, 1):uint(), u(1, 1):uint()
    local tagged = band(c0, 0x80) ~= 0
    local last = band(c0, 0x40) ~= 0
    local dv = band(c0, 0x03)
    local hl = tagged and TAGGED_HDR or UNTAGGED_HDR
    local rv = rshift(ctl, 6)
    local op = (rv == 2) and band(ctl, 0x1F) or band(ctl, 0x0F)
    local info = lookup_op(rv, op)

    local dt = t:add(F.ddp, u(0, math.min(n, hl)))
    local dc = dt:add(F.ddp_control, u(0, 1))
    dc:add(F.ddp_t, u(0, 1))
    dc:add(F.ddp_l, u(0, 1))
    dc:add(F.ddp_rsvd, u(0, 1))
    dc:add(F.ddp_dv, u(0, 1))
    local rt = t:add(F.rdmap, u(1, 1))
    local rc = rt:add(F.rdmap_control, u(1, 1))
    rc:add(F.rdmap_rv, u(1, 1))
    -- Under RV 2 the opcode has 5 bits (V2 draft §4.1), under RV 1 four:
    -- the field holds the opcode as the frame's own RV reads it.
    rc:add(F.rdmap_rsvd, u(1, 1), band(ctl, rv == 2 and 0x20 or 0x30))
    rc:add(F.rdmap_opcode, u(1, 1), op)

    local name = (info and info.name) or (op_names[op] and (op_names[op] .. " (undefined for RV " .. rv .. ")")) or
        string.format("opcode 0x%02X", op)
    local summary = name
    if n < hl then
        return summary, "ULPDU shorter than its DDP header"
    end
    local qn
    if tagged then
        dt:add(F.ddp_stag, u(2, 4))
        local to = add_u64(dt, F.ddp_to, u(6, 8))
        summary = summary .. string.format(" STag=%s TO=%s", hex32(u(2, 4):uint()), to)
    else
        if info and info.inv then
            rt:add(F.inv_stag, u(2, 4))
        else
            dt:add(F.ddp_ulp, u(2, 4))
        end
        dt:add(F.ddp_qn, u(6, 4))
        dt:add(F.ddp_msn, u(10, 4))
        dt:add(F.ddp_mo, u(14, 4))
        qn = u(6, 4):uint()
        summary = summary .. string.format(" QN=%d MSN=%d MO=%d", qn, u(10, 4):uint(), u(14, 4):uint())
        if info and info.inv then
            summary = summary .. " InvSTag=" .. hex32(u(2, 4):uint())
        end
    end
    if last then
        summary = summary .. " L"
    end
    dt:append_text(tagged and ", tagged" or ", untagged")
    rt:append_text(string.format(", RV %d, %s", rv, name))

    if rv ~= 1 and rv ~= 2 then
        return summary, "invalid RDMAP version"
    end
    if not info then
        return summary, "opcode not defined for this RDMAP version"
    end
    if (info.tagged == true) ~= tagged then
        return summary, "opcode in the wrong DDP buffer model"
    end
    local h = hl
    local rest = n - h
    local perr
    local kind = info.hdr
    if info.immlast and last then
        kind = "immediate"
    end
    if kind == "none" then
        if rest > 0 then
            rt:add(F.payload, u(h, rest))
        end
        rt:add(F.payload_length, rest):set_generated()
        summary = summary .. " payload=" .. rest
    elseif kind == "terminate" then
        local s, e = dissect_terminate(u, h, rt)
        summary, perr = summary .. " " .. s:gsub("^Terminate ", ""), e
    elseif kind == "immediate" then
        if rest ~= 8 then
            if rest > 0 then
                rt:add(F.payload, u(h, rest))
            end
            perr = "immediate data is not exactly 8 bytes"
        else
            rt:add(F.immediate, u(h, 8))
            summary = summary .. " imm=" .. tostring(u(h, 8):bytes()):lower()
        end
    elseif rest < info.hlen then
        perr = "ULPDU shorter than its RDMAP header"
    else
        if kind == "readreq" then
            rt:add(F.sink_stag, u(h, 4))
            add_u64(rt, F.sink_to, u(h + 4, 8))
            rt:add(F.rdmardsz, u(h + 12, 4))
            rt:add(F.src_stag, u(h + 16, 4))
            add_u64(rt, F.src_to, u(h + 20, 8))
            summary = summary .. string.format(" size=%d srcSTag=%s", u(h + 12, 4):uint(), hex32(u(h + 16, 4):uint()))
        elseif kind == "readv2req" then
            rt:add(F.rdmardsz, u(h, 4))
            rt:add(F.src_stag, u(h + 4, 4))
            add_u64(rt, F.src_to, u(h + 8, 8))
            summary = summary .. string.format(" size=%d srcSTag=%s", u(h, 4):uint(), hex32(u(h + 4, 4):uint()))
        elseif kind == "atomicreq" then
            local aop = band(u(h, 4):uint(), 0x0F)
            rt:add(F.atomic_rsvd, u(h, 4))
            rt:add(F.aopcode, u(h, 4))
            rt:add(F.request_id, u(h + 4, 4))
            rt:add(F.atomic_stag, u(h + 8, 4))
            add_u64(rt, F.atomic_to, u(h + 12, 8))
            if aop == 0 then
                add_u64(rt, F.add_data, u(h + 20, 8))
                add_u64(rt, F.add_mask, u(h + 28, 8))
            else
                add_u64(rt, F.swap_data, u(h + 20, 8))
                add_u64(rt, F.swap_mask, u(h + 28, 8))
            end
            add_u64(rt, F.compare_data, u(h + 36, 8))
            add_u64(rt, F.compare_mask, u(h + 44, 8))
            local aname = (aop == 0 and "FetchAdd") or (aop == 2 and "CmpSwap") or string.format("AOpCode 0x%X", aop)
            summary = summary .. string.format(" %s reqid=%s STag=%s TO=%s", aname, hex32(u(h + 4, 4):uint()),
                hex32(u(h + 8, 4):uint()), "0x" .. u(h + 12, 8):uint64():tohex():lower())
            if aop ~= 0 and aop ~= 2 then
                perr = "unsupported atomic operation code"
            end
        elseif kind == "atomicresp" then
            rt:add(F.orig_request_id, u(h, 4))
            local v = add_u64(rt, F.orig_value, u(h + 4, 8))
            summary = summary .. string.format(" reqid=%s orig=%s", hex32(u(h, 4):uint()), v)
        end
        if rest > info.hlen then
            rt:add(F.payload, u(h + info.hlen, rest - info.hlen))
            rt:add(F.payload_length, rest - info.hlen):set_generated()
            perr = perr or "payload after the RDMAP header of a message that carries none"
        end
    end
    if perr then
        return summary, perr
    end

    -- The receiver's checks (wire.ValidateDDPHeader), against the agreed
    -- RDMAP version; without both startup frames, against the frame's own.
    local want = c.startup and c.rv or rv
    local cerr
    if dv ~= 1 then
        cerr = "invalid DDP version"
    elseif rv ~= want then
        cerr = string.format("invalid RDMAP version (RV %d, %d in use)", rv, want)
    elseif not tagged and qn ~= info.qn then
        cerr = string.format("invalid QN for the opcode (%d, want %d)", qn, info.qn)
    end
    return summary, nil, cerr, op, rv
end

-- dissect_fpdu dissects the FPDU at off, at stream position pos; it returns
-- the octets used (or minus the octets still missing) and an Info summary.
local function dissect_fpdu(tvb, off, pinfo, tree, c, d, pos)
    local avail = tvb:reported_length_remaining(off)
    -- Markers only where the direction's MPA frame was captured: they are
    -- placed from its end.
    local markers = d.markers and d.mpa_pos ~= nil and d.base ~= nil
    local phase = markers and ((pos - d.base) % MARKER_INTERVAL) or 0
    local hoff = (markers and phase == 0) and MARKER_LEN or 0
    if avail < hoff + 2 then
        return -(hoff + 2 - avail)
    end
    local ulen = tvb(off + hoff, 2):uint()
    local marks, pieces, crcoff, size = fpdu_layout(phase, ulen, markers)
    if avail < size then
        return -(size - avail)
    end

    local pitem = tree:add(iwarp, tvb(off, size))
    local ft = pitem:add(F.fpdu, tvb(off, size))
    ft:add(F.ulpdu_length, tvb(off + hoff, 2))
    local ulpdu_start = nil
    for _, p in ipairs(pieces) do
        if p[2] <= 2 and 2 < p[2] + p[3] then
            ulpdu_start = p[1] + (2 - p[2])
        end
    end
    -- Markers: FPDUPTR counts from the ULPDU_Length field (after a leading
    -- marker) to the marker, modulo 2^16; its two low bits and the reserved
    -- octets are ignored (RFC 5044 §4.2).
    if markers then
        ft:add(F.markers, tvb(off, size), #marks):set_generated()
    end
    for _, m in ipairs(marks) do
        local r = tvb(off + m, MARKER_LEN)
        local mt = ft:add(F.marker, r)
        mt:add(F.marker_reserved, tvb(off + m, 2))
        mt:add(F.marker_fpduptr, tvb(off + m + 2, 2))
        local got = tvb(off + m + 2, 2):uint()
        local want = (m == 0) and 0 or ((m - hoff) % 65536)
        if band(got, 0xFFFC) ~= want then
            mt:add(F.marker_expected, tvb(off + m + 2, 2), want):set_generated()
            mt:add_proto_expert_info(E.marker, string.format("FPDUPTR %d, want %d", got, want))
        end
        if tvb(off + m, 2):uint() ~= 0 or band(got, 3) ~= 0 then
            mt:add_proto_expert_info(E.marker_reserved)
        end
    end
    local pl = pad_len(ulen)
    if pl > 0 then
        local pt = content_tvb(tvb, off, pieces, 2 + ulen, pl, "MPA pad")
        ft:add(F.pad, pt(0, pl))
    end
    -- The CRC covers every octet before the CRC field, markers included
    -- (RFC 5044 §4.4); the field carries it little-endian.
    local crc = tvb(off + crcoff, CRC_LEN):le_uint()
    local crc_item = ft:add_le(F.crc, tvb(off + crcoff, CRC_LEN))
    local mode = c.crc
    if mode == "unknown" then
        -- One startup frame was not captured: the direction's first FPDU
        -- decides (internal/decode, "assumed").
        if not pinfo.visited and d.crc_assumed == nil then
            d.crc_assumed = crc32c(tvb:raw(off, crcoff)) == crc
        end
        mode = d.crc_assumed and "on" or "off"
    end
    local crc_ok = true
    if mode == "on" then
        local computed = crc32c(tvb:raw(off, crcoff))
        crc_ok = computed == crc
        ft:add(F.crc_computed, tvb(off + crcoff, CRC_LEN), computed):set_generated()
        ft:add(F.crc_status, tvb(off + crcoff, CRC_LEN), crc_ok and 1 or 0):set_generated()
        crc_item:append_text(crc_ok and " [Good]" or string.format(" [Bad: computed 0x%08x]", computed))
        if not crc_ok then
            crc_item:add_proto_expert_info(E.crc, string.format("Bad CRC32c: 0x%08x, computed 0x%08x", crc, computed))
        end
    else
        ft:add(F.crc_status, tvb(off + crcoff, CRC_LEN), 2):set_generated()
        crc_item:append_text(" [not checked: CRC not in use]")
    end

    local summary
    if ulen < 14 then
        ft:add_proto_expert_info(E.ulpdu_length)
        summary = "FPDU with ULPDU_Length " .. ulen
    else
        local u = content_tvb(tvb, off, pieces, 2, ulen, "ULPDU (markers removed)")
        local perr, cerr, op, rv
        summary, perr, cerr, op, rv = dissect_ulpdu(u, pitem, c)
        if perr then
            pitem:add_proto_expert_info(E.parse, "DDP segment does not parse: " .. perr)
        elseif cerr then
            pitem:add_proto_expert_info(E.check, "DDP segment a receiver rejects: " .. cerr)
        end
        if not perr and c.rtr and d.key == c.initiator and pos == d.base then
            pitem:add(F.rtr, tvb(off, size), c.rtr .. " RTR"):set_generated()
            pitem:add_proto_expert_info(E.rtr, "P2P ready-to-receive (" .. c.rtr .. " RTR)")
            summary = summary .. " [" .. c.rtr .. " RTR]"
        elseif not perr and c.startup and c.ext == 0 and rv == 1 and op >= 0x8 and op <= 0xB then
            pitem:add_proto_expert_info(E.liberal)
        end
    end
    if not crc_ok then
        summary = summary .. " [bad CRC]"
    end
    local dir = (d.key == c.initiator and "I>R") or (d.key == c.responder and "R>I") or nil
    if dir then
        pitem:add(F.direction, dir):set_generated()
    end
    pitem:append_text(", " .. summary)
    return size, summary
end

---------------------------------------------------------------------------
-- The stream: MPA frames, then FPDUs, with TCP reassembly
---------------------------------------------------------------------------

local function starts_with_key(tvb)
    if tvb:len() < 16 then return false end
    local k = tvb:raw(0, 16)
    return k == REQUEST_KEY or k == REPLY_KEY
end

-- dissect dissects what TCP hands over of a connection: in its first pass
-- in stream order, each octet once (TCP passes no retransmitted data on and
-- holds back what this dissector asks it to reassemble), so a count of the
-- octets seen places every FPDU in its direction's stream.
local function dissect(tvb, pinfo, tree)
    local reasm = tvb:offset() == 0 -- reassembled data has no offset in the frame
    local fr = frames[pinfo.number]
    local c, d, start
    if pinfo.visited then
        if not fr then return 0 end
        c, d = fr.c, fr.d
        start = reasm and fr.b or fr.a
        if start == nil then return 0 end
    else
        c = conns[conn_key(pinfo)]
        local key = starts_with_key(tvb)
        if not c then
            if not key then return 0 end
            c = new_conn(pinfo)
        end
        d = dir_state(c, pinfo)
        if key and d.mpa_pos ~= nil and d.pos ~= d.mpa_pos then
            -- An MPA frame where an FPDU would start: a new TCP connection
            -- between the same endpoints (Decode As hands them all to
            -- this dissector).
            c = new_conn(pinfo)
            d = dir_state(c, pinfo)
        end
        start = d.pos
        if d.mpa_pos == nil and d.base == nil then
            -- The direction's first data: its MPA frame, or (without one)
            -- FPDUs, whose markers are then not placed.
            if starts_with_key(tvb) then
                d.mpa_pos = start
            else
                d.base = start
            end
        end
        fr = fr or {}
        frames[pinfo.number] = fr
        fr.c, fr.d = c, d
        if reasm then fr.b = start else fr.a = start end
    end

    pinfo.cols.protocol = "iWARP"
    local infos = {}
    local off, len = 0, tvb:reported_len()
    while off < len do
        local at = start + off
        local n, summary
        if at == d.mpa_pos then
            n, summary = dissect_mpa_frame(tvb, off, pinfo, tree, c, d, at)
        else
            n, summary = dissect_fpdu(tvb, off, pinfo, tree, c, d, at)
        end
        if n < 0 then
            pinfo.desegment_offset = off
            pinfo.desegment_len = -n
            break
        end
        infos[#infos + 1] = summary
        off = off + n
    end
    if not pinfo.visited then
        d.pos = start + math.min(off, len)
    end
    if #infos > 0 then
        local text = table.concat(infos, " | ")
        if not reasm and fr.b ~= nil then
            pinfo.cols.info:append(" | " .. text)
        else
            pinfo.cols.info:set(text)
        end
    end
    return len
end

iwarp.dissector = dissect

-- The heuristic: the MPA Request or Reply key at the start of a direction's
-- stream claims the connection for this dissector, as its conversation
-- dissector. Later passes repeat the first pass's verdicts.
local function heuristic(tvb, pinfo, tree)
    if pinfo.visited then
        if not heur[pinfo.number] then return false end
        dissect(tvb, pinfo, tree)
        return true
    end
    local ok = starts_with_key(tvb)
    -- At the start of the stream: relative sequence number 1 where TCP's
    -- fields are at hand (and relative sequence numbers are on).
    local rel, raw = last_value(f_seq), last_value(f_seq_raw)
    if ok and rel ~= nil and rel ~= raw and rel ~= 1 then
        ok = false
    end
    heur[pinfo.number] = ok
    if not ok then
        return false
    end
    new_conn(pinfo)
    pinfo.conversation = iwarp
    dissect(tvb, pinfo, tree)
    return true
end

iwarp:register_heuristic("tcp", heuristic)
DissectorTable.get("tcp.port"):add_for_decode_as(iwarp)
