//go:build amd64 && !purego

#include "textflag.h"

// FOLD moves the two lanes of Y forward by the distance of the constants
// in K (low quadword times the first, high quadword times the second) and
// XORs them into ACC, using T.
#define FOLD(K, Y, ACC, T) \
	VPCLMULQDQ $0x00, K, Y, T \
	VPCLMULQDQ $0x11, K, Y, Y \
	VPXOR T, ACC, ACC \
	VPXOR Y, ACC, ACC

// STEP folds the eight lanes of Y0-Y3 onto the next 128 octets at SI
// with the constants in Y8 (128 octets forward).
#define STEP \
	VMOVDQU 0(SI), Y4 \
	VMOVDQU 32(SI), Y5 \
	VMOVDQU 64(SI), Y6 \
	VMOVDQU 96(SI), Y7 \
	FOLD(Y8, Y0, Y4, Y9) \
	FOLD(Y8, Y1, Y5, Y10) \
	FOLD(Y8, Y2, Y6, Y11) \
	FOLD(Y8, Y3, Y7, Y12) \
	VMOVDQA Y4, Y0 \
	VMOVDQA Y5, Y1 \
	VMOVDQA Y6, Y2 \
	VMOVDQA Y7, Y3

// FIRST loads the first 128 octets at SI into Y0-Y3 with the CRC register
// in AX XORed into their first four, and the main loop's constants at DX
// into Y8.
#define FIRST \
	VMOVD AX, X4 \
	VMOVDQU 0(SI), Y0 \
	VMOVDQU 32(SI), Y1 \
	VMOVDQU 64(SI), Y2 \
	VMOVDQU 96(SI), Y3 \
	VPXOR Y4, Y0, Y0 \
	VBROADCASTI128 0(DX), Y8

// REDUCE folds the eight lanes of Y0-Y3 into one (Y0, Y1 and Y2 onto Y3,
// 96, 64 and 32 octets forward; Y3's low lane onto its high lane, 16
// forward) with the constants at DX, and leaves in CX the CRC register of
// those 16 octets from zero (using AX and BX).
#define REDUCE \
	VBROADCASTI128 16(DX), Y8 \
	FOLD(Y8, Y0, Y3, Y9) \
	VBROADCASTI128 32(DX), Y8 \
	FOLD(Y8, Y1, Y3, Y9) \
	VBROADCASTI128 48(DX), Y8 \
	FOLD(Y8, Y2, Y3, Y9) \
	VEXTRACTI128 $1, Y3, X1 \
	VMOVDQU 64(DX), X8 \
	VPCLMULQDQ $0x00, X8, X3, X9 \
	VPCLMULQDQ $0x11, X8, X3, X3 \
	VPXOR X9, X1, X1 \
	VPXOR X3, X1, X1 \
	VMOVQ X1, AX \
	VPEXTRQ $1, X1, BX \
	XORL CX, CX \
	CRC32Q AX, CX \
	CRC32Q BX, CX

// func foldAVX2(state uint32, p *byte, n int, k *[10]uint64) uint32
TEXT ·foldAVX2(SB), NOSPLIT, $0-36
	MOVL state+0(FP), AX
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ k+24(FP), DX

	FIRST
	ADDQ $128, SI
	SUBQ $128, CX
	JZ reduce

loop:
	STEP
	ADDQ $128, SI
	SUBQ $128, CX
	JNZ loop

reduce:
	REDUCE
	VZEROUPPER
	MOVL CX, ret+32(FP)
	RET

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	RET

// SCALAR advances the three scalar streams at R8, R9 and R10 (registers
// R11, R12, R13) by 40 octets each with the crc32 instruction.
#define SCALAR \
	CRC32Q 0(R8), R11 \
	CRC32Q 0(R9), R12 \
	CRC32Q 0(R10), R13 \
	CRC32Q 8(R8), R11 \
	CRC32Q 8(R9), R12 \
	CRC32Q 8(R10), R13 \
	CRC32Q 16(R8), R11 \
	CRC32Q 16(R9), R12 \
	CRC32Q 16(R10), R13 \
	CRC32Q 24(R8), R11 \
	CRC32Q 24(R9), R12 \
	CRC32Q 24(R10), R13 \
	CRC32Q 32(R8), R11 \
	CRC32Q 32(R9), R12 \
	CRC32Q 32(R10), R13 \
	ADDQ $40, R8 \
	ADDQ $40, R9 \
	ADDQ $40, R10

// SHIFT multiplies the CRC register in REG by the constant at OFF(BX)
// (x^(8L-33) mod P, reflected: the register moves L octets forward) and
// reduces the product with the crc32 instruction into REG.
#define SHIFT(REG, OFF) \
	VMOVD REG, X0 \
	VMOVD OFF(BX), X1 \
	VPCLMULQDQ $0x00, X1, X0, X0 \
	VMOVQ X0, AX \
	XORL REG, REG \
	CRC32Q AX, REG

// func hybridAVX2(state uint32, p *byte, iters int, k *[10]uint64, shift *[4]uint32) uint32
TEXT ·hybridAVX2(SB), NOSPLIT, $0-44
	MOVL state+0(FP), AX
	MOVQ p+8(FP), SI
	MOVQ iters+16(FP), DI
	MOVQ k+24(FP), DX

	// The vector region is the first 128*iters octets, then three scalar
	// regions of 40*iters octets each.
	MOVQ DI, R8
	SHLQ $7, R8
	ADDQ SI, R8
	IMUL3Q $40, DI, BX
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	XORL R11, R11
	XORL R12, R12
	XORL R13, R13

	FIRST
	ADDQ $128, SI
	SCALAR
	DECQ DI
	JZ hreduce

hloop:
	SCALAR
	STEP
	ADDQ $128, SI
	DECQ DI
	JNZ hloop

hreduce:
	REDUCE

	// The vector region's register moves past the three scalar regions,
	// the first scalar one's past two, the second's past one.
	MOVQ shift+32(FP), BX
	SHIFT(CX, 0)
	SHIFT(R11, 4)
	SHIFT(R12, 8)
	XORL R11, CX
	XORL R12, CX
	XORL R13, CX
	VZEROUPPER
	MOVL CX, ret+40(FP)
	RET
