#!/usr/bin/env python3
"""Sends training datagrams (docs/design/training.md, the wire of python/gpuscope/_wire.py) to an agent's
training socket as fake ranks of one process: the load of bench/training_agent_cost.sh.

  rate mode:  RATE records per second for SECONDS, spread over RANKS ranks, each rank's stream what the NCCL
              plugin and the Python package send: per collective an entry record and a completion record,
              a step record after every 12 collectives, 100 records a datagram. Non-blocking like the
              producers: a datagram the agent's buffer cannot take is dropped and counted.
  fill mode:  every one of RANKS ranks sends FILL completed collectives on two communicators and FILL/12
              steps, blocking (nothing dropped): the rank's windows in the agent are full afterwards.

Prints one JSON line: records and datagrams sent, records dropped, seconds taken.
Usage: training_load.py SOCKET --ranks N (--rate R --seconds S | --fill K)"""

import argparse
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from gpuscope import _wire  # noqa: E402

RECORDS_PER_DATAGRAM = 100
ALL_REDUCE = _wire.OPS["all_reduce"]


class Rank:
    """One fake rank's stream of records."""

    def __init__(self, rank, world):
        self.hello = _wire.hello(rank, rank % 8, world, "")
        self.seq = 0
        self.step = 0
        self.pending_entry = False

    def records(self, count, now_ns, entries=True):
        out = []
        while len(out) < count:
            comm = 0xC0FFEE + (self.seq & 1)
            if entries and not self.pending_entry:
                out.append(_wire.collective(comm, self.seq, ALL_REDUCE, 64 << 20, 8, now_ns, 0))
                self.pending_entry = True
                continue
            out.append(_wire.collective(comm, self.seq, ALL_REDUCE, 64 << 20, 8, now_ns - 2_000_000, now_ns))
            self.pending_entry = False
            self.seq += 1
            if self.seq % 12 == 0 and len(out) < count:
                out.append(_wire.step(self.step, now_ns - 100_000_000, now_ns, 32))
                self.step += 1
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("socket")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--rate", type=float)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--fill", type=int)
    args = parser.parse_args()
    ranks = [Rank(r, args.ranks) for r in range(args.ranks)]
    sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sent = datagrams = dropped = 0
    began = time.monotonic()

    if args.fill:
        for rank in ranks:
            left = args.fill + args.fill // 12
            while left > 0:
                n = min(RECORDS_PER_DATAGRAM, left)
                records = rank.records(n, time.time_ns(), entries=False)
                sender.sendto(_wire.datagram([rank.hello] + records, 0), args.socket)
                sent += len(records)
                datagrams += 1
                left -= len(records)
    else:
        sender.setblocking(False)
        deadline = began + args.seconds
        turn = 0
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            due = int(args.rate * (now - began))
            while sent + dropped < due:
                rank = ranks[turn % len(ranks)]
                turn += 1
                records = rank.records(RECORDS_PER_DATAGRAM, time.time_ns())
                try:
                    sender.sendto(_wire.datagram([rank.hello] + records, 0), args.socket)
                    sent += len(records)
                    datagrams += 1
                except BlockingIOError:
                    dropped += len(records)
            time.sleep(0.005)
    print(json.dumps({"records": sent, "datagrams": datagrams, "dropped": dropped,
                      "seconds": round(time.monotonic() - began, 3)}))


if __name__ == "__main__":
    main()
