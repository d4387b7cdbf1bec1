// The cluster test: 3 nsqrd and 2 lookupds on loopback, a go-nsq consumer that finds the
// nodes through lookupd (ConnectToNSQLookupds) and must receive every message published to
// the three nodes, then the reference's lookupd behaviours seen from a cluster: a stopped node
// leaves /lookup, channel pre-creation across nodes, tombstoning (hidden, then removed for good
// when the node deletes the topic; back after the lifetime otherwise) and deleting on lookupd.
//
//	NSQRD_BIN=target/debug/nsqrd LOOKUPD_BIN=target/debug/nsqrlookupd go test -v ./...
//
// tests/cluster/run.sh sets the defaults; LOOKUPD_BIN may name an upstream nsqlookupd.
package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nsqio/go-nsq"
)

const tombstoneLifetime = 3 * time.Second

// proc is a running binary with its ports.
type proc struct {
	name     string
	cmd      *exec.Cmd
	tcp      int
	http     int
	log      *os.File
	stopped  bool
	dataPath string
}

// freePort is a port nothing listens on, below the kernel's ephemeral range (32768-60999 by
// default) so that no socket bound to port 0 elsewhere (another server, an outgoing
// connection) can take it before the daemon binds it.
func freePort(t *testing.T) int {
	t.Helper()
	for i := 0; i < 1000; i++ {
		port := 20000 + rand.Intn(12768)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port in 20000-32767 after 1000 tries")
	return 0
}

func binary(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set (tests/cluster/run.sh sets it)", env)
	}
	return p
}

func start(t *testing.T, name, bin string, tcp, http int, args ...string) *proc {
	t.Helper()
	logf, err := os.CreateTemp("", "nsqr-cluster-"+name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{
		fmt.Sprintf("--tcp-address=127.0.0.1:%d", tcp),
		fmt.Sprintf("--http-address=127.0.0.1:%d", http),
		"--broadcast-address=127.0.0.1",
	}, args...)
	cmd := exec.Command(bin, all...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, tcp: tcp, http: http, log: logf}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("--- %s log ---\n%s", name, tail(string(b), 40))
		}
		os.Remove(logf.Name())
		if p.dataPath != "" {
			os.RemoveAll(p.dataPath)
		}
	})
	eventually(t, 10*time.Second, name+" answers /ping", func() bool {
		code, _ := get(p.url("/ping"))
		return code == 200
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *proc) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", p.http, path) }
func (p *proc) tcpAddr() string        { return fmt.Sprintf("127.0.0.1:%d", p.tcp) }
func (p *proc) node() string           { return fmt.Sprintf("127.0.0.1:%d", p.http) }

// stop sends SIGTERM and waits (bounded), then kills.
func (p *proc) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

var client = &http.Client{Timeout: 5 * time.Second}

func get(url string) (int, []byte) {
	r, err := client.Get(url)
	if err != nil {
		return 0, nil
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, b
}

func post(t *testing.T, url string) {
	t.Helper()
	r, err := client.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, r.StatusCode, b)
	}
}

func eventually(t *testing.T, d time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lookup returns the HTTP ports of the producers lookupd lists for topic (nil on 404).
func lookup(l *proc, topic string) []int {
	code, body := get(l.url("/lookup?topic=" + topic))
	if code != 200 {
		return nil
	}
	var v struct {
		Producers []struct {
			HTTPPort int `json:"http_port"`
		} `json:"producers"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	ports := []int{}
	for _, p := range v.Producers {
		ports = append(ports, p.HTTPPort)
	}
	sort.Ints(ports)
	return ports
}

func ports(ps ...*proc) string {
	v := []int{}
	for _, p := range ps {
		v = append(v, p.http)
	}
	sort.Ints(v)
	return fmt.Sprint(v)
}

// hasTopic reports whether the node has the topic (from /stats).
func hasTopic(p *proc, topic string) bool {
	_, body := get(p.url("/stats?format=json&topic=" + topic))
	var v struct {
		Topics []struct {
			Name     string `json:"topic_name"`
			Channels []struct {
				Name  string `json:"channel_name"`
				Depth int    `json:"depth"`
			} `json:"channels"`
		} `json:"topics"`
	}
	return json.Unmarshal(body, &v) == nil && len(v.Topics) == 1
}

func channelDepth(p *proc, topic, channel string) int {
	_, body := get(p.url("/stats?format=json&topic=" + topic + "&channel=" + channel))
	var v struct {
		Topics []struct {
			Channels []struct {
				Depth int `json:"depth"`
			} `json:"channels"`
		} `json:"topics"`
	}
	if json.Unmarshal(body, &v) != nil || len(v.Topics) != 1 || len(v.Topics[0].Channels) != 1 {
		return -1
	}
	return v.Topics[0].Channels[0].Depth
}

func TestCluster(t *testing.T) {
	nsqrd, lookupdBin := binary(t, "NSQRD_BIN"), binary(t, "LOOKUPD_BIN")
	var lookupds []*proc
	var lookupdTCP []string
	for i := 0; i < 2; i++ {
		l := start(t, fmt.Sprintf("lookupd%d", i+1), lookupdBin, freePort(t), freePort(t),
			"--tombstone-lifetime="+tombstoneLifetime.String())
		lookupds = append(lookupds, l)
		lookupdTCP = append(lookupdTCP, "--lookupd-tcp-address="+l.tcpAddr())
	}
	var nodes []*proc
	for i := 0; i < 3; i++ {
		dir, err := os.MkdirTemp("", "nsqr-cluster-data-")
		if err != nil {
			t.Fatal(err)
		}
		n := start(t, fmt.Sprintf("nsqrd%d", i+1), nsqrd, freePort(t), freePort(t),
			append([]string{"--data-path=" + dir}, lookupdTCP...)...)
		n.dataPath = dir
		nodes = append(nodes, n)
	}
	for _, l := range lookupds {
		eventually(t, 10*time.Second, l.name+" lists the 3 nodes", func() bool {
			_, body := get(l.url("/nodes"))
			var v struct {
				Producers []json.RawMessage `json:"producers"`
			}
			return json.Unmarshal(body, &v) == nil && len(v.Producers) == 3
		})
	}

	// Every message published to any node reaches a consumer that only knows the lookupds.
	const topic, perNode = "clu", 50
	quiet := log.New(io.Discard, "", 0)
	publish := func(batch string) map[string]bool {
		want := map[string]bool{}
		for i, n := range nodes {
			p, err := nsq.NewProducer(n.tcpAddr(), nsq.NewConfig())
			if err != nil {
				t.Fatal(err)
			}
			p.SetLogger(quiet, nsq.LogLevelError)
			for j := 0; j < perNode; j++ {
				body := fmt.Sprintf("%s-node%d-%d", batch, i+1, j)
				if err := p.Publish(topic, []byte(body)); err != nil {
					t.Fatalf("publish to %s: %v", n.name, err)
				}
				want[body] = true
			}
			p.Stop()
		}
		return want
	}
	want := publish("before")
	for _, l := range lookupds {
		eventually(t, 5*time.Second, l.name+" /lookup lists the 3 nodes", func() bool {
			return fmt.Sprint(lookup(l, topic)) == ports(nodes...)
		})
	}

	var mu sync.Mutex
	got := map[string]int{}
	cfg := nsq.NewConfig()
	cfg.LookupdPollInterval = 500 * time.Millisecond
	cfg.MaxInFlight = 100
	consumer, err := nsq.NewConsumer(topic, "ch", cfg)
	if err != nil {
		t.Fatal(err)
	}
	consumer.SetLogger(quiet, nsq.LogLevelError)
	consumer.AddHandler(nsq.HandlerFunc(func(m *nsq.Message) error {
		mu.Lock()
		got[string(m.Body)]++
		mu.Unlock()
		return nil
	}))
	if err := consumer.ConnectToNSQLookupds([]string{lookupds[0].node(), lookupds[1].node()}); err != nil {
		t.Fatal(err)
	}
	defer consumer.Stop()
	received := func(want map[string]bool) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for b := range want {
				if got[b] == 0 {
					return false
				}
			}
			return true
		}
	}
	eventually(t, 15*time.Second, "every message published before the consumer", received(want))
	after := publish("after")
	eventually(t, 10*time.Second, "every message published while consuming", received(after))
	mu.Lock()
	if len(got) != 2*3*perNode {
		t.Errorf("received %d distinct messages, want %d", len(got), 2*3*perNode)
	}
	mu.Unlock()
	if s := consumer.Stats(); s.Connections != 3 {
		t.Errorf("consumer has %d connections, want 3", s.Connections)
	}

	// A new topic on one node gets the channels its topic has on other nodes (pre-creation).
	post(t, nodes[0].url("/topic/create?topic=pre"))
	post(t, nodes[0].url("/channel/create?topic=pre&channel=pc"))
	eventually(t, 5*time.Second, "lookupd knows pre/pc", func() bool {
		_, body := get(lookupds[0].url("/channels?topic=pre"))
		return strings.Contains(string(body), `"pc"`)
	})
	post(t, nodes[1].url("/topic/create?topic=pre"))
	r, err := client.Post(nodes[1].url("/pub?topic=pre"), "text/plain", strings.NewReader("x"))
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("pub: %v %v", err, r)
	}
	r.Body.Close()
	eventually(t, 10*time.Second, "nsqrd2 pre-created pre/pc and it got the message", func() bool {
		return channelDepth(nodes[1], "pre", "pc") == 1
	})

	// A stopped node disappears from /lookup on both lookupds.
	nodes[2].stop()
	for _, l := range lookupds {
		eventually(t, 5*time.Second, l.name+" drops the stopped node", func() bool {
			return fmt.Sprint(lookup(l, topic)) == ports(nodes[0], nodes[1])
		})
	}

	// Tombstoning node 2 on lookupd1 hides it there only; deleting the topic on node 2 then
	// removes it for good, and consumers polling lookupd do not bring the topic back.
	post(t, lookupds[0].url("/topic/tombstone?topic="+topic+"&node="+nodes[1].node()))
	eventually(t, 2*time.Second, "lookupd1 hides the tombstoned node", func() bool {
		return fmt.Sprint(lookup(lookupds[0], topic)) == ports(nodes[0])
	})
	if fmt.Sprint(lookup(lookupds[1], topic)) != ports(nodes[0], nodes[1]) {
		t.Errorf("lookupd2 must still list both nodes: %v", lookup(lookupds[1], topic))
	}
	_, body := get(lookupds[0].url("/nodes"))
	if !strings.Contains(string(body), `"tombstones":[true`) && !strings.Contains(string(body), `,true`) {
		t.Errorf("lookupd1 /nodes shows no tombstone: %s", body)
	}
	post(t, nodes[1].url("/topic/delete?topic="+topic))
	eventually(t, 5*time.Second, "lookupd2 drops the node that deleted the topic", func() bool {
		return fmt.Sprint(lookup(lookupds[1], topic)) == ports(nodes[0])
	})
	time.Sleep(tombstoneLifetime + 500*time.Millisecond)
	if fmt.Sprint(lookup(lookupds[0], topic)) != ports(nodes[0]) {
		t.Errorf("after the tombstone lifetime lookupd1 lists %v, want only node 1", lookup(lookupds[0], topic))
	}
	if hasTopic(nodes[1], topic) {
		t.Errorf("the consumer re-created %s on the deleted node", topic)
	}

	// A tombstone without a delete expires: the node comes back after the lifetime.
	post(t, lookupds[1].url("/topic/tombstone?topic="+topic+"&node="+nodes[0].node()))
	eventually(t, 2*time.Second, "lookupd2 hides node 1", func() bool {
		return len(lookup(lookupds[1], topic)) == 0
	})
	eventually(t, tombstoneLifetime+3*time.Second, "node 1 back on lookupd2", func() bool {
		return fmt.Sprint(lookup(lookupds[1], topic)) == ports(nodes[0])
	})

	// Deleting the topic on a lookupd removes it there (404), not on the other lookupd.
	post(t, lookupds[0].url("/topic/delete?topic="+topic))
	if code, _ := get(lookupds[0].url("/lookup?topic=" + topic)); code != 404 {
		t.Errorf("lookupd1 /lookup after /topic/delete: %d, want 404", code)
	}
	if code, _ := get(lookupds[1].url("/lookup?topic=" + topic)); code != 200 {
		t.Errorf("lookupd2 /lookup: %d, want 200", code)
	}
}
