// Renderer of how a committed JSON was made, from its `provenance`
// (src/tools/regenerate/provenance.ts): one line per part, so that the pages
// say which commit each part measured and how long it took without a figure
// copied by hand. Whether that commit's code is HEAD's is `regenerate --check`'s
// to say: a page cannot know which commit it is read at.
import { type FigureLine, line } from './figureRegions.js';

const thousands = (n: number): string => n.toLocaleString('en-US');

/** `- docs/<file>: N runs at <commit>, <duration>, <load>`; a JSON without provenance is named as such. */
export function provenance(json: unknown, file: string): FigureLine[] {
  return [
    line(json, (r) => {
      if (!r.has('provenance')) return `- \`docs/${file}\`: no \`provenance\`, made before \`regenerate\` recorded one: void as evidence of any code.`;
      const tree = r.value('provenance.clean') === true ? '' : ' (the tree was not clean)';
      const seconds = r.num('provenance.duration_s');
      const load = `the load average ${r.num('provenance.load_average.start')} before and ${r.num('provenance.load_average.end')} after on ${r.num('provenance.cpus')} cores`;
      return `- \`docs/${file}\`: ${r.num('provenance.runs')} runs at \`${r.str('provenance.commit').slice(0, 7)}\`${tree}, ${thousands(seconds)} s (${Math.round(seconds / 60)} min), ${load}.`;
    }),
  ];
}
