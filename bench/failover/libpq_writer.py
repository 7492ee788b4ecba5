"""The client of the failover benchmark, the same for every system: libpq with every member's
address and target_session_attrs=read-write, so libpq itself finds the writable one (no
system-specific locator). One connection, one INSERT per transaction (autocommit), each with the
next sequence number; after an error it reconnects through libpq's host list.

Commands on stdin, one per line:
  hosts ADDR,ADDR,...   the members (host:port), tried in this order from the next connection on
  resume TRIAL          write rows tagged TRIAL
  pause                 stop after the transaction in flight; answers "paused" once settled
  stop                  exit
Lines on stdout:
  ack TRIAL SEQ MONOTONIC_NS HOST:PORT   a commit the server acknowledged
  fail MONOTONIC_NS                      an attempt (connect or insert) that failed
  paused
Times are CLOCK_MONOTONIC (time.monotonic_ns), the clock Node's process.hrtime reads.
"""

import os
import sys
import threading
import time

import psycopg

TABLE = os.environ.get("BENCH_TABLE", "kanri_bench_writes")
state = {"hosts": [], "trial": 0, "paused": True, "stopped": False}
changed = threading.Condition()
out_lock = threading.Lock()


def emit(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def read_commands():
    for line in sys.stdin:
        word, _, arg = line.strip().partition(" ")
        with changed:
            if word == "hosts":
                state["hosts"] = [a for a in arg.split(",") if a]
                state["reconnect"] = True
            elif word == "resume":
                state["trial"] = int(arg)
                state["paused"] = False
            elif word == "pause":
                state["paused"] = True
                state["pause_asked"] = True
            elif word == "stop":
                state["stopped"] = True
            changed.notify_all()
    with changed:
        state["stopped"] = True
        changed.notify_all()


def connect(hosts):
    return psycopg.connect(
        host=",".join(a.rsplit(":", 1)[0] for a in hosts),
        port=",".join(a.rsplit(":", 1)[1] for a in hosts),
        user=os.environ["PGUSER"],
        password=os.environ["PGPASSWORD"],
        dbname=os.environ.get("PGDATABASE", "postgres"),
        target_session_attrs="read-write",
        connect_timeout=2,
        autocommit=True,
    )


def main():
    threading.Thread(target=read_commands, daemon=True).start()
    conn = None
    address = None
    seq = 0
    while True:
        with changed:
            while state["paused"] and not state["stopped"]:
                if state.pop("pause_asked", False):
                    emit("paused")
                changed.wait()
            if state["stopped"]:
                break
            trial = state["trial"]
            hosts = list(state["hosts"])
            reconnect = state.pop("reconnect", False)
        if reconnect and conn is not None:
            conn.close()
            conn = None
        try:
            if conn is None:
                conn = connect(hosts)
                address = f"{conn.info.host}:{conn.info.port}"
        except psycopg.Error:
            emit(f"fail {time.monotonic_ns()}")
            time.sleep(0.05)
            continue
        seq += 1
        try:
            conn.execute(f"insert into {TABLE} (trial, seq) values (%s, %s)", (trial, seq))
            emit(f"ack {trial} {seq} {time.monotonic_ns()} {address}")
        except psycopg.Error:
            # Not acknowledged: its fate is unknown, so it is never counted as lost.
            emit(f"fail {time.monotonic_ns()}")
            conn.close()
            conn = None
            time.sleep(0.02)
    if conn is not None:
        conn.close()


if __name__ == "__main__":
    main()
