"""A stdio upstream whose process is gone while a file exists: it exits before answering.

Run as ``python gone_while.py DOWN STARTS PID [misbehaving.py's options]``. Each start adds a
line to ``STARTS``. While ``DOWN`` exists the process exits at once, answering nothing (the
gateway's session sees its connection closed, as when a server crashes on start); otherwise
it writes its process id to ``PID`` (so a test can end it, by that id) and becomes
``misbehaving.py`` with the options that follow.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    down, starts, pid = sys.argv[1:4]
    with open(starts, "a", encoding="utf-8") as out:
        out.write("started\n")
    if os.path.exists(down):
        sys.exit(3)
    Path(pid).write_text(str(os.getpid()), encoding="utf-8")
    script = Path(__file__).with_name("misbehaving.py")
    # The same process id: ending it ends the upstream the gateway talks to.
    os.execv(sys.executable, [sys.executable, str(script), *sys.argv[4:]])


if __name__ == "__main__":
    main()
