// The documents tell the truth about the committed runs: every figure taken
// from a committed JSON (docs/bench-*.json, docs/upgrade-test*.json) sits in a
// generated region and equals what src/tools/docs renders from that JSON
// (`npm run docs:figures` rewrites them); the README stays a front door; and
// every link in the README and docs/ reaches a file (and heading) that exists.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { upgradeSummary } from '../../../../src/tools/docs/upgradeTestFigures.js';
import { provenance } from '../../../../src/tools/docs/provenanceFigures.js';
import { discoveryPaths, fanout, freshness, sideBySideVsUpstream } from '../../../../src/tools/docs/benchFigures.js';
import { findRegions, line, type RegionSpan, regionDifference, replaceRegions } from '../../../../src/tools/docs/figureRegions.js';
import { documentDifferences, renderDocument } from '../../../../src/tools/docs/regions.js';
import { documents, jsonReader } from '../../../../src/tools/docs/figures.js';

/** The repository, from dist/test/unit/tools/docs. */
const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

describe('generated regions', () => {
  const doc = ['intro', '<!-- figures x.json table: begin -->', 'old', '<!-- figures x.json table: end -->', 'outro'].join('\n');

  it('a region is the text between its begin and end markers, with the JSON and renderer they name', () => {
    assert.deepEqual(findRegions(doc), [{ file: 'x.json', region: 'table', beginLine: 2, body: ['old'] }]);
  });

  it('a begin marker without its end is an error, not a region', () => {
    assert.throws(() => findRegions('<!-- figures x.json table: begin -->\nold'), /no end marker/);
  });

  it('rendering replaces only the text between the markers', () => {
    assert.equal(
      replaceRegions(doc, () => ['new 1', 'new 2']),
      ['intro', '<!-- figures x.json table: begin -->', 'new 1', 'new 2', '<!-- figures x.json table: end -->', 'outro'].join('\n'),
    );
  });

  it('a differing line is reported with its line number and the JSON keys it comes from', () => {
    const [span] = findRegions(doc);
    assert.ok(span);
    const rendered = [line({ a: { b: 3 } }, (r) => `b is ${r.num('a.b')}`)];
    assert.match(regionDifference(span, rendered) ?? '', /^line 3 \(from a\.b\): the document says "old", x\.json gives "b is 3"$/);
  });

  it('a key missing from the JSON is named', () => {
    assert.throws(() => line({ summary: {} }, (r) => String(r.num('summary.p50_ms'))), /no key summary\.p50_ms/);
  });
});

describe('renderers', () => {
  const counts = (total: number, runs: number[]) => ({ total, runs });
  const zero = counts(0, [0, 0]);
  const upgrade = {
    procedure: { from: 'v1', to: 'v2', apiservers: ['a', 'b'], runs: 2, short: false, invariants: ['watches_broken', 'errors_5xx_while_served'] },
    summary: {
      mvproxy: {
        requests: counts(10, [5, 5]),
        spurious_404: zero,
        incomplete_discovery: zero,
        errors_5xx: counts(3, [2, 1]),
        errors_5xx_without_retry_after: zero,
        watches_broken: zero,
        errors_5xx_while_served: counts(1, [0, 1]),
      },
    },
    runs: { mvproxy: [{ load_average: { start: 1, end: 2 } }, { load_average: { start: 3, end: 4 } }] },
  };

  it('an upgrade run names every shared invariant it broke, with its count per run', () => {
    const rows = upgradeSummary(upgrade).map((l) => l.text);
    assert.ok(rows.includes('| `mvproxy` | 10 | 0 | 0 | 3 (2, 1) | 1 (0, 1) | 0 | `errors_5xx_while_served` 1 (0, 1) |'), rows.join('\n'));
  });

  it('an upgrade run that broke no shared invariant says none', () => {
    const kept = structuredClone(upgrade);
    kept.summary.mvproxy.errors_5xx_while_served = zero;
    const mvproxy = upgradeSummary(kept).find((l) => l.text.startsWith('| `mvproxy` |'));
    assert.match(mvproxy?.text ?? '', /\| none \|$/);
  });

  it("the discovery paths: one row per path, mvproxy over the floor, with both Envoys' upstream connections per 1,000 requests", () => {
    const keys = ['apis_json', 'apis_protobuf', 'openapi_index', 'apis_doubtful_json', 'apis_doubtful_protobuf', 'apis_changed_json', 'apis_changed_protobuf'];
    const summary: Record<string, number> = {};
    keys.forEach((key, i) => {
      summary[`${key}_p50_vs_minimal_envoy`] = 1 + i / 10;
      summary[`${key}_throughput_vs_minimal_envoy`] = 0.5;
    });
    for (const key of ['apis_json', 'apis_protobuf', 'openapi_index', 'apis_doubtful_json', 'apis_doubtful_protobuf', 'apis_changed']) {
      summary[`${key}_upstream_cx_per_1000`] = key === 'openapi_index' ? 1000 : 0.5;
      summary[`${key}_upstream_cx_per_1000_minimal_envoy`] = 0;
    }
    const json = {
      summary,
      documentPaths: {
        accept: { apisDoubtfulJson: 'A', apisDoubtfulProtobuf: 'B' },
        apisChanged: {
          samples: 30,
          burst: 64,
          formats: {
            json: { sides: { mvproxy: { listedTheChange: 14, latencySamples: 15 } } },
            protobuf: { sides: { mvproxy: { listedTheChange: 15, latencySamples: 15 } } },
          },
        },
      },
    };
    const rows = discoveryPaths(json).map((l) => l.text);
    assert.equal(rows.length, 2 + keys.length + 3);
    assert.ok(rows.includes('| `/openapi/v3`, the OpenAPI v3 index | 1.20x | 0.50x | 1000 / 0 |'), rows.join('\n'));
    assert.ok(rows.includes('| `/apis`, local document changed, protobuf | 1.60x | 0.50x | 0.5 / 0 |'), rows.join('\n'));
    assert.match(rows.at(-1) ?? '', /listed the new group in 29 of 30\.$/);
  });

  it('a run from before the discovery paths were measured says so instead of failing', () => {
    assert.deepEqual(
      discoveryPaths({ summary: {} }).map((l) => l.text),
      ['This run predates these paths: `npm run bench -- --only discovery` measures them.'],
    );
  });

  it("the fan-out's CPU per change is the median of the timed changes, not of the change with CRDs", () => {
    const sample = (ms: number, cpu: number, withCrds = false) => ({ ms, controlPlaneCpuMs: cpu, nodesChanged: 2, withCrds });
    const json = structuredClone(JSON.parse(read('docs/bench-fanout.json')) as { fanout: { samples: unknown[] }; details_from_run?: number });
    json.fanout.samples = [sample(10, 1000), sample(10, 3000), sample(10, 2000), sample(90_000, 50_000, true)];
    delete json.details_from_run;
    assert.ok(fanout(json).some((l) => l.text === "| the replica's CPU per timed change, p50 | 2.0 s |"));
  });

  it('a fan-out combined from several runs names the run its per-change CPU comes from', () => {
    const json = structuredClone(JSON.parse(read('docs/bench-fanout.json')) as { details_from_run?: number; valid_runs?: number });
    json.details_from_run = 2;
    json.valid_runs = 3;
    assert.ok(fanout(json).some((l) => /^\| the replica's CPU per timed change, p50 \| [\d.]+ s \(run 2 of 3\) \|$/.test(l.text)));
  });

  it("the fan-out's p99 target is met only when every run's largest change is within it", () => {
    const json = structuredClone(JSON.parse(read('docs/bench-fanout.json')) as { spread: Record<string, { max: number }> });
    const p99Row = (): string => fanout(json).find((l) => l.text.startsWith('| p99, target'))?.text ?? '';
    json.spread['fanout_200_nodes_max_ms'] = { ...json.spread['fanout_200_nodes_max_ms'], max: 1000 };
    assert.match(p99Row(), /\| met: /);
    json.spread['fanout_200_nodes_max_ms'] = { ...json.spread['fanout_200_nodes_max_ms'], max: 1001 };
    assert.match(p99Row(), /\| not met: /);
  });

  it("the fan-out's p99 row refuses a run of more than 100 changes, whose p99 is no longer their largest", () => {
    const json = structuredClone(JSON.parse(read('docs/bench-fanout.json')) as { summary: Record<string, number> });
    json.summary['fanout_200_nodes_samples'] = 101;
    assert.throws(() => fanout(json), /101 changes a run/);
  });

  it('a ratio from several runs shows its median and its range over the runs', () => {
    const json = structuredClone(JSON.parse(read('docs/bench-side-by-side.json')) as { summary: Record<string, number>; spread?: unknown });
    json.summary['rerouted_p50_vs_upstream'] = 1.1;
    json.spread = { rerouted_p50_vs_upstream: { median: 1.1, min: 1, max: 1.25, runs: [1, 1.1, 1.25] } };
    assert.ok(sideBySideVsUpstream(json).some((l) => l.text.startsWith('| rerouted GET (a resource only the peer serves) | 1.10x (1.00x–1.25x) |')));
  });

  /** The committed freshness JSON as if it combined three runs, its spread only the figures given (each figure's value per run). */
  const freshnessOfRuns = (spread: Record<string, number[]>): unknown => {
    const json = structuredClone(JSON.parse(read('docs/bench-freshness.json')) as { summary: Record<string, number>; spread?: unknown; valid_runs?: number });
    json.valid_runs = 3;
    json.spread = Object.fromEntries(
      Object.entries(spread).map(([key, runs]) => {
        const sorted = [...runs].sort((a, b) => a - b);
        json.summary[key] = sorted[1] ?? 0;
        return [key, { median: sorted[1], min: sorted[0], max: sorted[2], runs }];
      }),
    );
    return json;
  };
  const crdsCreatedRow = (json: unknown): string => freshness(json).find((l) => l.text.startsWith('| with the CRDs in place | created |'))?.text ?? '';

  it('a freshness figure from several runs shows its median and its range over the runs', () => {
    const json = freshnessOfRuns({ freshness_crds_created_mvproxy_every_p50_ms: [170, 150, 190] });
    assert.match(crdsCreatedRow(json), /^\| with the CRDs in place \| created \| 170 \(150–190\) \/ /);
  });

  it("freshness counts the samples capped in every run, not the median run's", () => {
    const json = freshnessOfRuns({ freshness_crds_created_upstream_capped: [0, 0, 5] });
    assert.match(crdsCreatedRow(json), /\(5 capped over 3 runs\)/);
  });

  const made = {
    provenance: {
      commit: '17017a0c79a917f227cb04294831dd8ec3547279',
      clean: true,
      runs: 3,
      duration_s: 4114,
      cpus: 2,
      load_average: { start: 1.06, end: 5.31 },
    },
  };

  it("a part's provenance line names its file, runs, commit, duration and the machine's load", () => {
    assert.deepEqual(
      provenance(made, 'bench-fanout.json').map((l) => l.text),
      ['- `docs/bench-fanout.json`: 3 runs at `17017a0`, 4,114 s (69 min), the load average 1.06 before and 5.31 after on 2 cores.'],
    );
  });

  it('a part made from a tree that was not clean says so', () => {
    const dirty = structuredClone(made);
    dirty.provenance.clean = false;
    assert.match(provenance(dirty, 'bench-fanout.json')[0]?.text ?? '', /at `17017a0` \(the tree was not clean\),/);
  });

  it('a JSON without a provenance is named void', () => {
    assert.match(provenance({ summary: {} }, 'bench-freshness.json')[0]?.text ?? '', /^- `docs\/bench-freshness\.json`: no `provenance`.*void/);
  });
});

describe('the documents', () => {
  const docs = documents(ROOT);
  const readJson = jsonReader(ROOT);

  for (const doc of docs) {
    it(`${doc}: every generated figure equals its JSON`, () => {
      assert.deepEqual(documentDifferences(doc, read(doc), readJson), []);
    });
  }

  /** The committed JSONs of docs/ that no region of any document (of those `cites`) renders from. */
  const uncited = (cites: (span: RegionSpan) => boolean = () => true): string[] => {
    const cited = new Set(
      docs.flatMap((doc) =>
        findRegions(read(doc))
          .filter(cites)
          .map((span) => span.file),
      ),
    );
    return readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.json') && !cited.has(name));
  };

  it('every committed JSON of docs/ is rendered into some document', () => {
    assert.deepEqual(uncited(), []);
  });

  it('how every committed JSON was made is on some page', () => {
    assert.deepEqual(
      uncited((span) => span.region === 'provenance'),
      [],
    );
  });

  it('rendering every document again changes nothing', () => {
    for (const doc of docs) assert.equal(renderDocument(read(doc), readJson), read(doc), doc);
  });

  it('the README is a front door: at most 200 lines', () => {
    const lines = read('README.md').split('\n').length - 1;
    assert.ok(lines <= 200, `README.md has ${lines} lines`);
  });

  it('every relative link in the README and docs/ reaches an existing file, and its #anchor a heading there', () => {
    const broken = docs.flatMap((doc) =>
      links(read(doc)).flatMap((target) => {
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? doc : normalize(join(dirname(doc), decodeURIComponent(path)));
        if (!existsSync(join(ROOT, file))) return [`${doc}: ${target} (no file ${file})`];
        if (anchor === undefined || statSync(join(ROOT, file)).isDirectory()) return [];
        return headingAnchors(read(file)).has(anchor) ? [] : [`${doc}: ${target} (no heading #${anchor} in ${file})`];
      }),
    );
    assert.deepEqual(broken, []);
  });
});

/** The targets of a document's Markdown links and images outside code blocks, other sites and mail left out. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '').filter((target) => !/^[a-z]+:/.test(target));
}

/** The anchors GitHub gives a document's headings (lower case, punctuation dropped, spaces to hyphens, repeats numbered). */
function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, title = ''] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = title
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}
