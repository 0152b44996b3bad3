// Package poll tells the engine's shell when a connection has bytes to read
// without a goroutine per connection: one Poller per Device holds every
// registered socket in an epoll set, one-shot, and calls the socket's
// Handler on its own goroutine when the socket becomes readable while armed
// (docs/engine-rebuild.md, "The shell: a locked core and tokens").
//
// The Poller's goroutine costs no thread while it waits: the epoll set's
// descriptor is itself registered with the Go runtime's network poller, so
// the goroutine parks there as a goroutine blocked in net.Conn.Read does,
// and is woken by the same runtime machinery.
//
// A registration is one-shot: Ready is called once per Arm. The shell
// re-arms whenever a QP's receive token goes free; because re-arming looks
// at the socket's state at that moment, bytes that arrived while the
// socket was disarmed make Ready run at once, and no timer is involved.
//
// Handle's Read, Readv, Write and Writev never block: they make one
// non-blocking system call through the connection's syscall.RawConn and
// report ErrWouldBlock when the socket has nothing to read or no room.
//
// Epoll is Linux's. Elsewhere (and on Linux with the iwarp_portable build
// tag, which tests the other systems' paths) New and Register return
// ErrUnsupported, and the shell keeps a receive goroutine per connection.
package poll
