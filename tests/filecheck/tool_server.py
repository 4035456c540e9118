"""Runs the project's tools for lit without a fresh interpreter per command: a server imports
what the tools import once, then forks a child per command that runs `python -m <tool>` (or a
console script, given by its path) as a fresh process would, on the client's standard streams,
directory, environment and arguments.

    python tool_server.py serve SOCKET   # prints "ready" once it listens
    python -I -S tool_server.py SOCKET MODULE ARGS...   # one command; its exit status
    python -I -S tool_server.py SOCKET /path/to/SCRIPT ARGS...   # the same for a script

A client that cannot reach the server runs the tool in a process of its own."""

import array
import json
import os
import socket
import sys

TOOLS = ("cim_opt", "cim_run", "cim_compile", "cim_validate", "cim_explore")


def serve(path: str) -> None:
    import importlib
    import runpy
    import traceback

    for tool in TOOLS:  # import everything the tools import, then forget the tools themselves
        importlib.import_module(f"cimxdsl.tools.{tool}")
    for name in [n for n in sys.modules if n.startswith("cimxdsl.tools.cim_")]:
        del sys.modules[name]
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(1)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        reap()
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:  # lit has gone
                return
            continue
        if os.fork():
            connection.close()
            continue
        listener.close()
        connection.settimeout(None)
        message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        request = json.loads(message)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        target = request["module"]
        script = os.sep in target  # (a script's path, not a module's name)
        sys.path[0] = os.path.dirname(target) if script else os.getcwd()  # as `python SCRIPT` or `-m` puts it
        sys.argv = [target, *request["args"]]
        try:
            if script:
                runpy.run_path(target, run_name="__main__")
            else:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                sys.stderr.write(f"{stop.code}\n")
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BrokenPipeError:  # as Python's own exit on a closed pipe
                code = code or 120
        connection.sendall(code.to_bytes(4, "little", signed=True))
        os._exit(code)


def reap() -> None:
    """Collect the children that have finished."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def run(path: str, module: str, args: list[str]) -> int:
    request = {"module": module, "args": args, "cwd": os.getcwd(), "env": dict(os.environ)}
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except OSError:  # no server: the tool in a process of its own
        if os.sep in module:
            os.execv(module, [module, *args])
        os.execv(sys.executable, [sys.executable, "-m", module, *args])
    descriptors = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))]
    connection.sendmsg([json.dumps(request).encode()], descriptors)
    reply = b""
    while len(reply) < 4 and (chunk := connection.recv(4 - len(reply))):
        reply += chunk
    if len(reply) < 4:
        sys.stderr.write(f"tool server: {module} ended without an exit status\n")
        return 1
    return int.from_bytes(reply, "little", signed=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3:]))
