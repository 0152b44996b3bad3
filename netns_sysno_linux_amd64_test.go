package iwarp_test

// sysSetns is setns(2) (syscall has no SYS_SETNS on amd64).
const sysSetns = 308
