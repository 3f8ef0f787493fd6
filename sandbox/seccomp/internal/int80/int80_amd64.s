#include "textflag.h"

// func Syscall(trap, a1, a2, a3 uintptr) uintptr
TEXT ·Syscall(SB),NOSPLIT,$0-40
	MOVQ	trap+0(FP), AX
	MOVQ	a1+8(FP), BX
	MOVQ	a2+16(FP), CX
	MOVQ	a3+24(FP), DX
	INT	$0x80
	MOVQ	AX, ret+32(FP)
	RET
