// Server-side dead letters seen by a real client: go-nsq v1.1.0's consumer, with its own
// MaxAttempts off, fails a message every time; with max_attempts = 3 set on the channel
// (POST /channel/config) nsqrd stops redelivering after the third attempt and the message
// reaches the dead-letter topic, where another go-nsq consumer receives it, body unchanged.
//
//	NSQRD_BIN=target/debug/nsqrd go test -v ./...
//
// tests/queues/run.sh sets the default.
package queues

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nsqio/go-nsq"
)

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

// startNsqrd runs NSQRD_BIN on free loopback ports with a fresh data path; stopped (SIGTERM,
// then kill) and cleaned up when the test ends.
func startNsqrd(t *testing.T) (tcpAddr, httpBase string) {
	t.Helper()
	bin := os.Getenv("NSQRD_BIN")
	if bin == "" {
		t.Fatal("NSQRD_BIN is not set (tests/queues/run.sh sets it)")
	}
	data := t.TempDir()
	tcp, web := freePort(t), freePort(t)
	logf, err := os.CreateTemp("", "nsqr-queues-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		fmt.Sprintf("--tcp-address=127.0.0.1:%d", tcp),
		fmt.Sprintf("--http-address=127.0.0.1:%d", web),
		"--broadcast-address=127.0.0.1",
		"--data-path="+data)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nsqrd: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("--- nsqrd log ---\n%s", b)
		}
		os.Remove(logf.Name())
	})
	httpBase = fmt.Sprintf("http://127.0.0.1:%d", web)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, err := http.Get(httpBase + "/ping"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("nsqrd did not answer /ping")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("127.0.0.1:%d", tcp), httpBase
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	r, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, r.StatusCode, b)
	}
	return string(b)
}

func consumerConfig() *nsq.Config {
	cfg := nsq.NewConfig()
	cfg.MaxAttempts = 0         // no client-side limit: the server's applies
	cfg.DefaultRequeueDelay = 0 // requeue at once
	cfg.MaxBackoffDuration = 0  // no backoff after a failure
	cfg.LookupdPollInterval = time.Second
	return cfg
}

func TestServerSideMaxAttemptsDeadLettersForGoNsq(t *testing.T) {
	tcpAddr, base := startNsqrd(t)
	post(t, base+"/channel/config?topic=orders&channel=billing", `{"max_attempts": 3}`)

	var mu sync.Mutex
	var attempts []uint16
	failing, err := nsq.NewConsumer("orders", "billing", consumerConfig())
	if err != nil {
		t.Fatal(err)
	}
	failing.SetLoggerLevel(nsq.LogLevelWarning)
	failing.AddHandler(nsq.HandlerFunc(func(m *nsq.Message) error {
		mu.Lock()
		attempts = append(attempts, m.Attempts)
		mu.Unlock()
		return errors.New("always fails")
	}))
	if err := failing.ConnectToNSQD(tcpAddr); err != nil {
		t.Fatal(err)
	}
	defer failing.Stop()

	dead := make(chan *nsq.Message, 4)
	inspector, err := nsq.NewConsumer("orders.dead", "inspect", consumerConfig())
	if err != nil {
		t.Fatal(err)
	}
	inspector.SetLoggerLevel(nsq.LogLevelWarning)
	inspector.AddHandler(nsq.HandlerFunc(func(m *nsq.Message) error {
		dead <- m
		return nil
	}))
	// The dead-letter topic appears with the first dead letter; go-nsq retries the
	// connection until SUB succeeds (SUB creates it).
	if err := inspector.ConnectToNSQD(tcpAddr); err != nil {
		t.Fatal(err)
	}
	defer inspector.Stop()

	producer, err := nsq.NewProducer(tcpAddr, nsq.NewConfig())
	if err != nil {
		t.Fatal(err)
	}
	producer.SetLoggerLevel(nsq.LogLevelWarning)
	defer producer.Stop()
	if err := producer.Publish("orders", []byte("poison pill")); err != nil {
		t.Fatal(err)
	}

	select {
	case m := <-dead:
		if string(m.Body) != "poison pill" {
			t.Fatalf("dead letter body %q", m.Body)
		}
		if m.Attempts != 1 {
			t.Fatalf("a fresh message in the dead-letter topic, got attempts %d", m.Attempts)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no dead letter within 30 s")
	}
	// Nothing more reaches the failing consumer: it saw exactly attempts 1, 2, 3.
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	got := append([]uint16(nil), attempts...)
	mu.Unlock()
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("deliveries to the failing consumer: %v, want [1 2 3]", got)
	}
	select {
	case m := <-dead:
		t.Fatalf("a second dead letter: %q", m.Body)
	default:
	}
	settings := post(t, base+"/channel/config?topic=orders&channel=billing", `{}`)
	if !bytes.Contains([]byte(settings), []byte(`"max_attempts":3`)) {
		t.Fatalf("settings: %s", settings)
	}
}
