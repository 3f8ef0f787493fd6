// Package review is the gate's review socket: the protocol (Request,
// Response and what they carry), the server that authorises a peer by the
// kernel's credentials and answers from the gate's Desk, and the client a
// reviewer's CLI uses. It holds no gate state: every decision is the Desk's.
package review
