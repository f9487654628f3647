// The Prometheus remote-write sender compliance suite (github.com/prometheus/compliance/remotewrite/sender,
// pinned in scripts/versions.env) run against gpuscope-agent. This file is only the adapter the suite
// asks of a sender under test: a sender.Sender that scrapes the suite's OpenMetrics target and pushes
// what it scraped to the suite's receiver. The agent does not scrape other targets, so the adapter
// copies the target into the agent's textfile directory (--collector.textfile.directory), converted
// from OpenMetrics 1.0 to text format 0.0.4, before the agent starts and then every 250 ms, written
// atomically (temporary file, rename). What text format 0.0.4 and the textfile collector cannot hold
// is dropped there, not faked: explicit timestamps, exemplars, _created series (start times), UNIT
// lines, and the histogram, summary, info, stateset and gaugehistogram types (their series stay, as
// untyped). The job and instance labels a scraping sender would add come from the agent's external
// labels.
//
// Built once by scripts/build-peers.sh (`go test -c`) and run by the CTest
// integration_remote_write_compliance_suite (tests/integration/rw_compliance_report.py). Environment:
// GPUSCOPE_AGENT, the gpuscope-agent binary; DEBUG=1 shows the agent's output.
package rwcompliance_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/compliance/remotewrite/sender"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// How long one case may take before the adapter gives up (the suite itself waits for ever).
const caseDeadline = 60 * time.Second

type gpuscopeAgent struct{ binary string }

func (gpuscopeAgent) Name() string { return "gpuscope" }

func (a gpuscopeAgent) Run(ctx context.Context, opts sender.Options) error {
	protocol := ""
	switch opts.RemoteWriteMessage {
	case remote.WriteV1MessageType:
		protocol = "1.0"
	case remote.WriteV2MessageType:
		protocol = "2.0"
	default:
		return fmt.Errorf("unknown remote-write message %q", opts.RemoteWriteMessage)
	}
	dir, err := os.MkdirTemp("", "gpuscope-rw-compliance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	textDir := filepath.Join(dir, "textfile")
	if err := os.Mkdir(textDir, 0o755); err != nil {
		return err
	}
	target := "http://" + opts.ScrapeTargetHostPort + "/metrics"
	// The first copy is there before the agent starts: the suite reads the agent's first request.
	if err := copyTarget(ctx, target, textDir); err != nil {
		return fmt.Errorf("first scrape of %s: %w", target, err)
	}
	caseCtx, cancel := context.WithTimeout(ctx, caseDeadline)
	defer cancel()
	go func() {
		ticker := time.NewTicker(250 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-caseCtx.Done():
				return
			case <-ticker.C:
				if err := copyTarget(caseCtx, target, textDir); err != nil && caseCtx.Err() == nil {
					fmt.Fprintf(os.Stderr, "rw-compliance: scrape of %s: %v\n", target, err)
				}
			}
		}
	}()
	// No NVML and no fixture trees here: the GPU, InfiniBand and host collectors are off. The process
	// collector and the agent's self-metrics go out beside the suite's series, as on a node.
	err = sender.RunCommand(caseCtx, dir, nil, a.binary,
		"--web.listen-address=127.0.0.1:0",
		"--events.state-dir="+filepath.Join(dir, "state"),
		"--no-collector.gpu", "--no-collector.infiniband", "--no-collector.host",
		"--collector.textfile.directory="+textDir,
		"--collector.textfile.interval=250ms",
		"--sink.remote-write.url="+opts.RemoteWriteEndpointURL,
		"--sink.remote-write.interval=1s",
		"--sink.remote-write.protocol="+protocol,
		"--sink.remote-write.external-label=job="+opts.ScrapeTargetJobName,
		"--sink.remote-write.external-label=instance="+opts.ScrapeTargetHostPort,
	)
	if ctx.Err() == nil && errors.Is(caseCtx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("the suite's receiver was not done with the agent within %v", caseDeadline)
	}
	if ctx.Err() != nil {
		return nil // the suite is done: stopping the agent is how a case ends
	}
	if err == nil {
		err = errors.New("gpuscope-agent exited")
	}
	return err
}

// copyTarget scrapes the target once and replaces textDir/target.prom with it in text format 0.0.4.
func copyTarget(ctx context.Context, url, textDir string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	text, err := openMetricsToText(body)
	if err != nil {
		return err
	}
	tmp := filepath.Join(textDir, ".target.prom.tmp")
	if err := os.WriteFile(tmp, text, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(textDir, "target.prom"))
}

type textSeries struct {
	help, typ string
	samples   []string
}

// openMetricsToText rewrites an OpenMetrics 1.0 body, read with Prometheus's own parser, as text format
// 0.0.4 of counters, gauges and untyped series (see the file comment for what is dropped).
func openMetricsToText(body []byte) ([]byte, error) {
	p := textparse.NewOpenMetricsParser(body, labels.NewSymbolTable(), textparse.WithOMParserSTSeriesSkipped())
	types := map[string]model.MetricType{}
	helps := map[string]string{}
	series := map[string]*textSeries{}
	var order []string
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch entry {
		case textparse.EntryType:
			name, typ := p.Type()
			types[string(name)] = typ
		case textparse.EntryHelp:
			name, help := p.Help()
			helps[string(name)] = string(help)
		case textparse.EntrySeries:
			var lset labels.Labels
			p.Labels(&lset)
			_, _, value := p.Series()
			name := lset.Get(labels.MetricName)
			s, ok := series[name]
			if !ok {
				s = &textSeries{typ: "untyped"}
				switch family, typ := familyOf(name, types); typ {
				case model.MetricTypeCounter:
					s.typ, s.help = "counter", helps[family]
				case model.MetricTypeGauge:
					s.typ, s.help = "gauge", helps[family]
				case model.MetricTypeUnknown:
					s.help = helps[family]
				}
				series[name] = s
				order = append(order, name)
			}
			s.samples = append(s.samples, name+labelText(lset)+" "+strconv.FormatFloat(value, 'g', -1, 64))
		}
	}
	var out bytes.Buffer
	for _, name := range order {
		s := series[name]
		if s.help != "" {
			help := strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s.help)
			fmt.Fprintf(&out, "# HELP %s %s\n", name, help)
		}
		fmt.Fprintf(&out, "# TYPE %s %s\n", name, s.typ)
		for _, line := range s.samples {
			out.WriteString(line + "\n")
		}
	}
	return out.Bytes(), nil
}

// familyOf is the OpenMetrics family of a sample name and its type: a counter's samples end in _total.
func familyOf(name string, types map[string]model.MetricType) (string, model.MetricType) {
	if base, ok := strings.CutSuffix(name, "_total"); ok && types[base] == model.MetricTypeCounter {
		return base, model.MetricTypeCounter
	}
	if typ, ok := types[name]; ok && (typ == model.MetricTypeGauge || typ == model.MetricTypeUnknown) {
		return name, typ
	}
	return name, "" // a sample of a histogram, summary, info, stateset or gaugehistogram: untyped
}

func labelText(lset labels.Labels) string {
	var pairs []string
	lset.Range(func(l labels.Label) {
		if l.Name == labels.MetricName {
			return
		}
		value := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l.Value)
		pairs = append(pairs, l.Name+`="`+value+`"`)
	})
	if len(pairs) == 0 {
		return ""
	}
	sort.Strings(pairs)
	return "{" + strings.Join(pairs, ",") + "}"
}

func TestRemoteWriteSenderCompliance(t *testing.T) {
	binary := os.Getenv("GPUSCOPE_AGENT")
	if binary == "" {
		t.Fatal("GPUSCOPE_AGENT must name the gpuscope-agent binary")
	}
	sender.RunTests(t, gpuscopeAgent{binary: binary}, sender.ComplianceTests())
}

// The adapter's own check, run with the suite's cases (rw_compliance_report.py fails when it fails):
// what the textfile directory gets for an OpenMetrics body like the suite's.
func TestAdapterConvertsOpenMetricsToTextFormat(t *testing.T) {
	in := `# HELP test_counter A "counter".
# TYPE test_counter counter
test_counter_total{path="a\\b\"c\nd"} 101.13 # {trace_id="1"} 1 1700000000
test_counter_created 1700000000
# TYPE test_histogram histogram
test_histogram_count 100
test_histogram_bucket{le="+Inf"} 100
test_histogram_created 1700000000
# TYPE test_gauge_with_ts gauge
test_gauge_with_ts 2 1700000000.5
# TYPE test_wait_seconds gauge
# UNIT test_wait_seconds seconds
test_wait_seconds NaN
# TYPE test_info info
test_info_info{version="1"} 1
# EOF
`
	want := `# HELP test_counter_total A "counter".
# TYPE test_counter_total counter
test_counter_total{path="a\\b\"c\nd"} 101.13
# TYPE test_histogram_count untyped
test_histogram_count 100
# TYPE test_histogram_bucket untyped
test_histogram_bucket{le="+Inf"} 100
# TYPE test_gauge_with_ts gauge
test_gauge_with_ts 2
# TYPE test_wait_seconds gauge
test_wait_seconds NaN
# TYPE test_info_info untyped
test_info_info{version="1"} 1
`
	got, err := openMetricsToText([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
