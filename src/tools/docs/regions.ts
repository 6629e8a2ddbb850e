// Every renderer a document's region may name, and the check of one document against its JSONs.
import { convergence, discovery, discoveryPaths, fanout, fanoutMemory, freshness, sideBySideVsDirect, sideBySideVsUpstream } from './benchFigures.js';
import { findRegions, type FigureLine, type Render, regionDifference, replaceRegions } from './figureRegions.js';
import { provenance } from './provenanceFigures.js';
import { watchScale } from './watchScaleFigures.js';
import { upgradeExtProcTimeouts, upgradeInCluster, upgradeProcedure, upgradeSpurious404s, upgradeStories, upgradeSummary } from './upgradeTestFigures.js';

export const RENDERERS: Readonly<Record<string, Render>> = {
  'side-by-side-vs-upstream': sideBySideVsUpstream,
  'side-by-side-vs-direct': sideBySideVsDirect,
  convergence,
  discovery,
  'discovery-paths': discoveryPaths,
  fanout,
  'fanout-memory': fanoutMemory,
  freshness,
  'watch-scale': watchScale,
  provenance,
  'upgrade-procedure': upgradeProcedure,
  'upgrade-summary': upgradeSummary,
  'upgrade-stories': upgradeStories,
  'upgrade-spurious-404s': upgradeSpurious404s,
  'upgrade-in-cluster': upgradeInCluster,
  'upgrade-ext-proc-timeouts': upgradeExtProcTimeouts,
};

/** Reads a committed JSON by its name under docs/ (parsed). */
export type ReadJson = (file: string) => unknown;

/** The lines a region renders from its JSON; throws naming the region when it has no renderer. */
export function renderRegion(file: string, region: string, readJson: ReadJson): FigureLine[] {
  const render = RENDERERS[region];
  if (!render) throw new Error(`no renderer named ${region} (src/tools/docs/regions.ts)`);
  try {
    return render(readJson(file), file);
  } catch (error) {
    throw new Error(`region ${region} of ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** One complaint per region of `doc` whose text differs from what its JSON renders. */
export function documentDifferences(doc: string, markdown: string, readJson: ReadJson): string[] {
  return findRegions(markdown).flatMap((span) => {
    const why = regionDifference(span, renderRegion(span.file, span.region, readJson));
    return why ? [`${doc}, region ${span.region} of docs/${span.file}, ${why} (npm run docs:figures rewrites it)`] : [];
  });
}

/** The document with every region rendered afresh from its JSON. */
export function renderDocument(markdown: string, readJson: ReadJson): string {
  return replaceRegions(markdown, (file, region) => renderRegion(file, region, readJson).map((l) => l.text));
}
