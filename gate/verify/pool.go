package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/policy"
)

// Verifiers outside the gate lock (issue 24 item 5). Run in a pass, a
// verifier held the gate's lock for as long as it ran: 11 drafts with a
// 3 s verifier made a 30 s pass, and every other session's drafts (and
// every review) waited behind it. Under `gate run` (Run sets a pool) a
// pass that needs a verifier's result it does not have starts the run in
// the background — at most verifyBound at once, verifyPerSession per
// session — and leaves the draft claimed and undecided (deferred, nothing
// written); the pass goes on with the other drafts and releases the lock.
// When a run ends, Run starts a pass, which finds the result and decides
// the draft with it. A result is keyed by everything the verifier is
// given — its name, command, profile and timeout, the draft's bytes as
// the gate rendered them, the resolved sources — so a draft or source
// changed since is verified again. Reviews, `gate once` and a gate
// without a pool run verifiers in the decision, as before.

// verifyBound and verifyPerSession bound the verifier runs at once.
var (
	verifyBound      = 4
	verifyPerSession = 2
)

// verifyKeep bounds the finished results kept (oldest dropped first).
const verifyKeep = 256

// Pool runs verifiers outside the decision, bounded in all and per
// session, and keeps their results for the draft's next pass.
type Pool struct {
	run  decide.VerifyFunc
	ctx  context.Context
	sem  chan struct{}
	ends chan struct{} // a run ended (capacity 1: Run starts a pass)

	mu        sync.Mutex
	jobs      map[string]*verifyJob
	finished  []string // keys of finished jobs, oldest first
	bySession map[string]int
	wg        sync.WaitGroup
}

type verifyJob struct {
	done bool
	res  decide.VerifierRun
}

func NewPool(ctx context.Context, run decide.VerifyFunc) *Pool {
	return &Pool{run: run, ctx: ctx, sem: make(chan struct{}, verifyBound), ends: make(chan struct{}, 1),
		jobs: map[string]*verifyJob{}, bySession: map[string]int{}}
}

func verifyKey(v policy.Verifier, draft []byte, sources []decide.SourceProof) string {
	h := sha256.New()
	meta, _ := json.Marshal(struct {
		Name, Profile string
		Command       []string
		Timeout       int64
		Sources       []decide.SourceProof
	}{v.Name, v.Profile, v.Command, int64(v.Timeout), sources})
	h.Write(meta)
	h.Write([]byte{0})
	h.Write(draft)
	return hex.EncodeToString(h.Sum(nil))
}

// Result returns the finished run of v on draft and sources; without one
// it starts the run (when the bounds allow; else a later pass asks again)
// and reports false.
func (p *Pool) Result(session string, v policy.Verifier, draft []byte, sources []decide.SourceProof) (decide.VerifierRun, bool) {
	key := verifyKey(v, draft, sources)
	p.mu.Lock()
	defer p.mu.Unlock()
	if j, ok := p.jobs[key]; ok {
		return j.res, j.done
	}
	if p.bySession[session] >= verifyPerSession {
		return decide.VerifierRun{}, false
	}
	select {
	case p.sem <- struct{}{}:
	default:
		return decide.VerifierRun{}, false
	}
	j := &verifyJob{}
	p.jobs[key] = j
	p.bySession[session]++
	draft = append([]byte(nil), draft...)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		res := p.run(p.ctx, v, draft, sources)
		<-p.sem
		p.mu.Lock()
		p.bySession[session]--
		if p.ctx.Err() != nil {
			delete(p.jobs, key) // cut off by the gate's end: not a result
		} else {
			j.res, j.done = res, true
			p.finished = append(p.finished, key)
			for len(p.finished) > verifyKeep {
				delete(p.jobs, p.finished[0])
				p.finished = p.finished[1:]
			}
		}
		p.mu.Unlock()
		select {
		case p.ends <- struct{}{}:
		default:
		}
	}()
	return decide.VerifierRun{}, false
}

// wait returns once every run started has ended (Run, after its context
// is cancelled: the runs' sandboxes are killed with it).
func (p *Pool) Wait() { p.wg.Wait() }

// Ends is sent on (without blocking, capacity 1) when a run ends: the
// gate's Run starts a pass on it.
func (p *Pool) Ends() <-chan struct{} { return p.ends }
