package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/review"
)

// The interactive review (issue 19 item 4): `fedmem review` on a terminal
// with no subcommand. A list of held drafts on the left (filterable), the
// gate's view of the selected one on the right (what `review show` prints:
// provenance, reasons, diffs, sources), and keys to decide. Every decision
// is the same request the commands send, so the gate judges it the same
// way; nothing the TUI shows comes from anywhere but the gate.

const tuiHelp = "↑/↓ j/k move · / filter · a approve · s approve+supersede · r reject (reason) · n skip · pgup/pgdn scroll · g refresh · q quit"

type tuiMode int

const (
	modeList tuiMode = iota
	modeFilter
	modeReason
)

type tuiModel struct {
	o       *reviewOptions
	all     []gate.Decision
	short   map[string]string
	shown   []gate.Decision // all, narrowed by the filter
	cursor  int
	filter  string
	mode    tuiMode
	input   textinput.Model
	preview viewport.Model
	shows   map[string]string // rendered show output by id
	status  string
	width   int
	height  int
	decided int
}

type listMsg struct {
	resp *review.Response
	err  error
}

type showMsg struct {
	id, text string
}

type decidedMsg struct {
	id   string
	resp *review.Response
	err  error
}

func newTUI(o *reviewOptions) tuiModel {
	in := textinput.New()
	in.CharLimit = 1000
	return tuiModel{o: o, input: in, preview: viewport.New(80, 20), shows: map[string]string{}, width: 120, height: 30}
}

func (m tuiModel) fetchList() tea.Cmd {
	return func() tea.Msg {
		r, err := m.o.ask(review.Request{Op: "list"})
		return listMsg{r, err}
	}
}

func (m tuiModel) fetchShow(id string) tea.Cmd {
	return func() tea.Msg {
		r, err := m.o.ask(review.Request{Op: "show", ID: id})
		var b bytes.Buffer
		if err != nil {
			fmt.Fprintf(&b, "show %s: %s\n", id, visible(err.Error()))
		} else {
			printReview(&b, "show", r, false)
		}
		return showMsg{id, b.String()}
	}
}

func (m tuiModel) decide(op, id, reason string, supersede bool) tea.Cmd {
	return func() tea.Msg {
		r, err := m.o.ask(review.Request{Op: op, ID: id, Reason: reason, Supersede: supersede})
		return decidedMsg{id, r, err}
	}
}

func (m tuiModel) Init() tea.Cmd { return m.fetchList() }

func (m *tuiModel) applyFilter() {
	m.shown = m.shown[:0]
	f := strings.ToLower(m.filter)
	for _, d := range m.all {
		if f == "" || strings.Contains(strings.ToLower(listLine(d, m.short)), f) {
			m.shown = append(m.shown, d)
		}
	}
	if m.cursor >= len(m.shown) {
		m.cursor = max(len(m.shown)-1, 0)
	}
}

func (m tuiModel) selected() (gate.Decision, bool) {
	if m.cursor < len(m.shown) {
		return m.shown[m.cursor], true
	}
	return gate.Decision{}, false
}

// showSelected puts the selected draft's show output in the preview,
// fetching it once.
func (m *tuiModel) showSelected() tea.Cmd {
	d, ok := m.selected()
	if !ok {
		m.preview.SetContent("nothing held for review")
		return nil
	}
	if t, ok := m.shows[d.ID]; ok {
		m.preview.SetContent(t)
		return nil
	}
	m.preview.SetContent("loading " + shortOf(d.ID, m.short) + "…")
	return m.fetchShow(d.ID)
}

func (m *tuiModel) layout() {
	m.preview.Width = max(m.width-m.listWidth()-3, 20)
	m.preview.Height = max(m.height-4, 5)
}

func (m tuiModel) listWidth() int { return min(max(m.width*2/5, 30), 70) }

func (m tuiModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case listMsg:
		if msg.err != nil {
			m.status = "list: " + msg.err.Error()
			return m, nil
		}
		m.all, m.short = msg.resp.Decisions, msg.resp.Short
		m.shown = make([]gate.Decision, 0, len(m.all))
		m.applyFilter()
		m.layout()
		return m, m.showSelected()
	case showMsg:
		m.shows[msg.id] = msg.text
		if d, ok := m.selected(); ok && d.ID == msg.id {
			m.preview.SetContent(msg.text)
		}
		return m, nil
	case decidedMsg:
		if msg.err != nil {
			m.status = shortOf(msg.id, m.short) + ": " + visible(msg.err.Error())
			return m, nil
		}
		var b bytes.Buffer
		printDecided(&b, msg.resp.Decision, msg.resp.Reviewer, m.short)
		m.status = strings.TrimSpace(b.String())
		m.decided++
		for i, d := range m.all {
			if d.ID == msg.id {
				m.all = append(m.all[:i:i], m.all[i+1:]...)
				break
			}
		}
		delete(m.shows, msg.id)
		m.applyFilter()
		return m, m.showSelected()
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m tuiModel) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch m.mode {
	case modeFilter, modeReason:
		switch k.Type {
		case tea.KeyEsc:
			m.mode = modeList
			m.status = "cancelled"
			return m, nil
		case tea.KeyEnter:
			v := m.input.Value()
			mode := m.mode
			m.mode = modeList
			if mode == modeFilter {
				m.filter = v
				m.applyFilter()
				return m, m.showSelected()
			}
			d, ok := m.selected()
			if !ok || strings.TrimSpace(v) == "" {
				m.status = "a rejection needs a reason"
				return m, nil
			}
			m.status = "rejecting " + shortOf(d.ID, m.short) + "…"
			return m, m.decide("reject", d.ID, v, false)
		}
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(k)
		return m, cmd
	}
	switch k.String() {
	case "q", "ctrl+c", "esc":
		return m, tea.Quit
	case "up", "k":
		if m.cursor > 0 {
			m.cursor--
		}
		return m, m.showSelected()
	case "down", "j", "n", " ":
		if m.cursor < len(m.shown)-1 {
			m.cursor++
		}
		return m, m.showSelected()
	case "/":
		m.mode = modeFilter
		m.input.Placeholder = "text in the line (session, type, risk, path, origin)"
		m.input.SetValue(m.filter)
		m.input.Focus()
		return m, textinput.Blink
	case "a":
		d, ok := m.selected()
		if !ok {
			return m, nil
		}
		m.status = "approving " + shortOf(d.ID, m.short) + "…"
		return m, m.decide("approve", d.ID, "", false)
	case "s":
		d, ok := m.selected()
		if !ok {
			return m, nil
		}
		m.status = "approving " + shortOf(d.ID, m.short) + ", superseding the note(s) it contradicts…"
		return m, m.decide("approve", d.ID, "", true)
	case "r":
		if _, ok := m.selected(); !ok {
			return m, nil
		}
		m.mode = modeReason
		m.input.Placeholder = "why (recorded and shown to the agent)"
		m.input.SetValue("")
		m.input.Focus()
		return m, textinput.Blink
	case "g":
		m.shows = map[string]string{}
		return m, m.fetchList()
	}
	var cmd tea.Cmd
	m.preview, cmd = m.preview.Update(k)
	return m, cmd
}

var (
	tuiSel    = lipgloss.NewStyle().Reverse(true)
	tuiTitle  = lipgloss.NewStyle().Bold(true)
	tuiBorder = lipgloss.NewStyle().BorderStyle(lipgloss.NormalBorder()).BorderRight(true)
)

func (m tuiModel) View() string {
	lw := m.listWidth()
	var list strings.Builder
	fmt.Fprintf(&list, "%s\n", tuiTitle.Render(fmt.Sprintf("held: %d shown of %d", len(m.shown), len(m.all))))
	rows := max(m.height-4, 1)
	start := 0
	if m.cursor >= rows {
		start = m.cursor - rows + 1
	}
	for i := start; i < len(m.shown) && i < start+rows; i++ {
		d := m.shown[i]
		line := fmt.Sprintf("%-6s %s %s %s", shortOf(d.ID, m.short), orUnknown(d.Type), orUnknown(d.Risk), visible(d.Path))
		if len([]rune(line)) > lw-1 {
			line = string([]rune(line)[:lw-2]) + "…"
		}
		if i == m.cursor {
			line = tuiSel.Render(line)
		}
		list.WriteString(line + "\n")
	}
	left := tuiBorder.Width(lw).Height(m.height - 3).Render(list.String())
	body := lipgloss.JoinHorizontal(lipgloss.Top, left, " ", m.preview.View())
	foot := tuiHelp
	switch m.mode {
	case modeFilter:
		foot = "filter: " + m.input.View()
	case modeReason:
		foot = "reject, reason: " + m.input.View()
	}
	status := m.status
	if m.filter != "" {
		status = fmt.Sprintf("[filter %q] %s", m.filter, status)
	}
	return body + "\n" + visible(status) + "\n" + foot
}

// runTUI runs the interactive review until the reviewer quits.
func runTUI(o *reviewOptions) error {
	if _, err := o.socketPath(); err != nil {
		return err
	}
	p := tea.NewProgram(newTUI(o), tea.WithAltScreen())
	final, err := p.Run()
	if err != nil {
		return err
	}
	if m, ok := final.(tuiModel); ok && m.decided > 0 {
		fmt.Printf("%d draft(s) decided\n", m.decided)
	}
	return nil
}
