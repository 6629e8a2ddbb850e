// The ADS server's budget of response bytes in flight (src/servers/responseBudget.ts),
// with streams that ask for room for one response of a given size when flushed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ResponseBudget } from '../../../src/servers/responseBudget.js';

class Stream {
  flushes = 0;
  sent = false;
  constructor(
    readonly name: string,
    private readonly bytes: number,
    private readonly budget: () => ResponseBudget<Stream>,
    private readonly order: string[],
  ) {}

  flush(): void {
    this.flushes++;
    if (this.sent) return;
    this.sent = this.budget().reserve(this, this.bytes);
    if (this.sent) this.order.push(this.name);
  }
}

function fleet(maxBytes: number, sizes: Record<string, number>): { budget: ResponseBudget<Stream>; streams: Record<string, Stream>; order: string[] } {
  const budget = new ResponseBudget<Stream>(maxBytes);
  const order: string[] = [];
  const streams = Object.fromEntries(Object.entries(sizes).map(([name, bytes]) => [name, new Stream(name, bytes, () => budget, order)]));
  for (const stream of Object.values(streams)) stream.flush();
  return { budget, streams, order };
}

describe('ResponseBudget', () => {
  it('takes responses while they fit, and one larger than the whole budget when nothing is in flight', () => {
    const { order } = fleet(100, { a: 60, b: 40, c: 1 });
    assert.deepEqual(order, ['a', 'b']);
    assert.deepEqual(fleet(100, { huge: 500, next: 1 }).order, ['huge']);
  });

  it('flushes the waiting streams oldest first as room comes back', () => {
    const { budget, order } = fleet(100, { a: 100, b: 50, c: 50, d: 50 });
    budget.release(100);
    assert.deepEqual(order, ['a', 'b', 'c']);
  });

  it('a waiting stream that still finds no room keeps its place; the smaller ones behind it neither pass it nor get flushed', () => {
    const { budget, streams, order } = fleet(100, { a: 50, b: 50, large: 80, small: 10 });
    budget.release(50);
    assert.deepEqual(order, ['a', 'b']);
    assert.equal(streams.small?.flushes, 1);
    budget.release(50);
    assert.deepEqual(order, ['a', 'b', 'large', 'small']);
  });

  it('a stream forgotten (closed) is not flushed again', () => {
    const { budget, streams, order } = fleet(100, { a: 100, gone: 10, next: 10 });
    budget.forget(streams.gone as Stream);
    budget.release(100);
    assert.deepEqual(order, ['a', 'next']);
    assert.equal(streams.gone?.flushes, 1);
  });
});
