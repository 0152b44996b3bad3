package iwarp_test

import "syscall"

// sysSetns is setns(2).
const sysSetns = syscall.SYS_SETNS
