package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The review client is plain net code, built on every platform the admin
// CLI builds on (reviewers use Macs), not only Linux like the gate: on a
// Mac, `fedmem review --socket PATH` can talk to a gate's review socket
// forwarded with `ssh -L PATH:/path/to/review.sock gatehost`; the gate then
// judges the peer credentials of the forwarding sshd, which runs as the
// reviewer's own user on the gate host. (The forwarding is not tested here.)

// Ask sends one request to the review socket at path.
func Ask(path string, req Request) (*Response, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("review socket %s: %w (is `fedmem gate run` running?)", path, err)
	}
	defer c.Close()
	// A batch commits once per draft (the gate grows its deadline alike).
	_ = c.SetDeadline(time.Now().Add(60*time.Second + time.Duration(len(req.IDs))*time.Second))
	werr := json.NewEncoder(c).Encode(req)
	var resp Response
	if err := json.NewDecoder(io.LimitReader(c, 64<<20)).Decode(&resp); err != nil {
		if werr != nil {
			return nil, fmt.Errorf("review socket: %w", werr)
		}
		return nil, fmt.Errorf("review socket: %w", err)
	}
	if !resp.OK {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}
