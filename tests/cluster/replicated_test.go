// A replicated topic (replicas = 3) on 3 nsqrd nodes with one lookupd: go-nsq's producer and
// its consumer (through ConnectToNSQLookupd) work through a SIGKILL of the topic's leader
// without code changes. lookupd lists the leader only; a follower acknowledges publishes by
// forwarding them to the leader; while no leader is elected a publish fails (E_PUB_FAILED)
// and is retried on the next node; the consumer follows the new leader and gets every
// acknowledged message (at least once).
package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nsqio/go-nsq"
)

// startReplicated starts 3 nsqrd nodes of one cluster registering with lookupd l.
func startReplicated(t *testing.T, bin string, l *proc) []*proc {
	t.Helper()
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secret, []byte("go-nsq cluster secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clusterPorts := []int{freePort(t), freePort(t), freePort(t)}
	peers := []string{}
	for i, p := range clusterPorts {
		peers = append(peers, fmt.Sprintf("%d@127.0.0.1:%d", i+1, p))
	}
	var nodes []*proc
	for i := range clusterPorts {
		dir, err := os.MkdirTemp("", "nsqr-replicated-data-")
		if err != nil {
			t.Fatal(err)
		}
		n := start(t, fmt.Sprintf("nsqrd%d", i+1), bin, freePort(t), freePort(t),
			"--data-path="+dir,
			"--lookupd-tcp-address="+l.tcpAddr(),
			fmt.Sprintf("--cluster-node-id=%d", i+1),
			fmt.Sprintf("--cluster-address=127.0.0.1:%d", clusterPorts[i]),
			"--cluster-peers="+strings.Join(peers, ","),
			"--cluster-secret-file="+secret)
		n.dataPath = dir
		nodes = append(nodes, n)
	}
	return nodes
}

// role is what node p's /stats says of its place in topic's group ("" if nothing yet).
func (p *proc) role(topic string) string {
	r, err := client.Get(p.url("/stats?format=json&topic=" + topic))
	if err != nil {
		return ""
	}
	defer r.Body.Close()
	var stats struct {
		Topics []struct {
			Replication *struct {
				Role string `json:"role"`
			} `json:"replication"`
		} `json:"topics"`
	}
	if json.NewDecoder(r.Body).Decode(&stats) != nil || len(stats.Topics) != 1 ||
		stats.Topics[0].Replication == nil {
		return ""
	}
	return stats.Topics[0].Replication.Role
}

// leaderOf waits for a live node that says it leads topic.
func leaderOf(t *testing.T, nodes []*proc, topic string) *proc {
	t.Helper()
	var leader *proc
	eventually(t, 60*time.Second, "a leader of "+topic, func() bool {
		for _, n := range nodes {
			if !n.stopped && n.role(topic) == "leader" {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

// kill is a SIGKILL (a crash), waited for.
func (p *proc) kill() {
	if p.stopped {
		return
	}
	p.stopped = true
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

func TestReplicatedTopicThroughALeaderKill(t *testing.T) {
	nsqrd, lookupdBin := binary(t, "NSQRD_BIN"), binary(t, "LOOKUPD_BIN")
	l := start(t, "lookupd", lookupdBin, freePort(t), freePort(t))
	nodes := startReplicated(t, nsqrd, l)
	const topic = "rep"
	for _, n := range nodes {
		r, err := client.Post(n.url("/topic/config?topic="+topic), "application/json",
			strings.NewReader(`{"replicas":3}`))
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("%s /topic/config: %v %v", n.name, err, r)
		}
		r.Body.Close()
	}

	// One go-nsq producer per node; a publish goes to a follower first, then to each node in
	// turn until one acknowledges it (a node that gets no leader to take it in time answers
	// E_PUB_FAILED, which go-nsq reports as an error).
	quiet := log.New(io.Discard, "", 0)
	producers := map[*proc]*nsq.Producer{}
	for _, n := range nodes {
		p, err := nsq.NewProducer(n.tcpAddr(), nsq.NewConfig())
		if err != nil {
			t.Fatal(err)
		}
		p.SetLogger(quiet, nsq.LogLevelError)
		producers[n] = p
		defer p.Stop()
	}
	leader := leaderOf(t, nodes, topic)
	var follower *proc // a follower: it stays up, only the leader is killed
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	ackedBy := map[*proc]int{}
	publish := func(body string) {
		deadline := time.Now().Add(60 * time.Second)
		order := append([]*proc{follower}, nodes...)
		for {
			for _, n := range order {
				if n.stopped {
					continue
				}
				if producers[n].Publish(topic, []byte(body)) == nil {
					ackedBy[n]++
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no node acknowledged %q within 60s", body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	var mu sync.Mutex
	got := map[string]int{}
	cfg := nsq.NewConfig()
	cfg.LookupdPollInterval = 500 * time.Millisecond
	cfg.MaxInFlight = 50
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
	want := map[string]bool{}
	for i := 0; i < 100; i++ {
		body := fmt.Sprintf("before-%d", i)
		publish(body)
		want[body] = true
	}
	if ackedBy[follower] != 100 {
		t.Fatalf("the follower acknowledged %d of 100 publishes (forwarded to the leader)", ackedBy[follower])
	}
	eventually(t, 30*time.Second, "lookupd lists the leader only", func() bool {
		return fmt.Sprint(lookup(l, topic)) == ports(leader)
	})
	if err := consumer.ConnectToNSQLookupd(l.node()); err != nil {
		t.Fatal(err)
	}
	defer consumer.Stop()
	received := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for b := range want {
			if got[b] == 0 {
				return false
			}
		}
		return true
	}
	eventually(t, 30*time.Second, "every message published before the kill", received)

	leader.kill()
	for i := 0; i < 100; i++ {
		body := fmt.Sprintf("after-%d", i)
		publish(body)
		want[body] = true
	}
	newLeader := leaderOf(t, nodes, topic)
	eventually(t, 30*time.Second, "lookupd lists the new leader only", func() bool {
		return fmt.Sprint(lookup(l, topic)) == ports(newLeader)
	})
	eventually(t, 60*time.Second, "every message published after the kill, from the new leader", received)
}
