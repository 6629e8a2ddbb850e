// The bytes of ADS responses in flight, shared by every stream of a server
// (AdsServerOptions.maxBytesInFlight).

/** What waits for room: flushed again when there may be some. */
export interface WaitingStream {
  flush(): void;
}

export class ResponseBudget<Stream extends WaitingStream> {
  private inFlight = 0;
  /** Streams holding a response back for room, oldest first. */
  private waiting = new Set<Stream>();

  constructor(private readonly maxBytes: number) {}

  /**
   * Takes room for a response of `bytes`, or queues the stream (keeping its
   * place if it already waits) and says no. A response larger than the whole
   * budget goes when nothing else is in flight.
   */
  reserve(stream: Stream, bytes: number): boolean {
    if (this.inFlight > 0 && this.inFlight + bytes > this.maxBytes) {
      this.waiting.add(stream);
      return false;
    }
    this.inFlight += bytes;
    return true;
  }

  /**
   * Gives back a response's room and flushes the waiting streams, oldest first,
   * while there is room. The first that still finds none keeps its place and
   * ends the pass: the streams behind it would only redo their push order for
   * room it is next in line for. (A stream not waiting, flushed by an ACK or a
   * new snapshot, may still take room that `reserve` finds free.)
   */
  release(bytes: number): void {
    this.inFlight -= bytes;
    while (this.inFlight < this.maxBytes) {
      const next = this.waiting.values().next();
      if (next.done) return;
      const stream = next.value;
      this.waiting.delete(stream);
      stream.flush();
      if (this.waiting.has(stream)) {
        this.waiting = new Set([stream, ...this.waiting]);
        return;
      }
    }
  }

  /** A closed stream waits no more. */
  forget(stream: Stream): void {
    this.waiting.delete(stream);
  }
}
