# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Placement in a process of its own, on the database of nova's harness.

Under nova 34's native threads, nova's functional harness keeps
placement's database in an SQLite file (WAL). This module serves real
placement on that file from another process, as a deployment runs it
away from nova-api, so that the pre-check's placement requests cost
nova-api's process only what they would cost it in a deployment.

``python -m benchmarks.placement_process URL`` prints ``PORT <n>`` once
serving on 127.0.0.1 and serves until its standard input closes.
"""

import subprocess
import sys
import threading


def serve(connection):
    from placement import db_api
    from placement import deploy
    from placement import policy
    from wsgiref import simple_server

    from nova_image_traits.simulate import server

    # The simulator's own configuration: no auth, the given database.
    conf = server._make_conf(connection)
    db_api.configure(conf)
    policy.init(conf, suppress_deprecation_warnings=True)
    app = deploy.loadapp(conf)
    httpd = simple_server.make_server(
        '127.0.0.1', 0, app, server_class=server._ThreadingWSGIServer,
        handler_class=server.QuietHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    sys.stdout.write('PORT %d\n' % httpd.server_port)
    sys.stdout.flush()
    sys.stdin.read()  # until the parent goes


def start(connection):
    """Start the server; return ``(process, endpoint)``."""
    proc = subprocess.Popen(
        [sys.executable, '-m', 'benchmarks.placement_process', connection],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith('PORT '):
        proc.kill()
        raise RuntimeError('placement did not start: %r' % line)
    return proc, 'http://127.0.0.1:%d' % int(line.split()[1])


def stop(proc):
    proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


if __name__ == '__main__':
    serve(sys.argv[1])
