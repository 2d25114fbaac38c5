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
"""A STAND-IN for neutron, not neutron: it answers every GET with nothing.

nova 34 calls the network service even for servers booted with
``--nic none`` (on delete it lists the server's ports, and it reads
extensions and quotas). Running real neutron here would be a much larger
job than the rest of the deployment, and no rebuild decision depends on
networking, so this stand-in answers:

* ``GET /`` and ``GET /v2.0``: a version document;
* ``GET /v2.0/quotas/<project>``: unlimited quotas;
* any other ``GET /v2.0/<collection>``: ``{"<collection>": []}``;
* anything else: 404.

It logs every request, so the deployment log shows what nova asked.

Usage: ``python neutron_standin.py PORT``
"""

import http.server
import json
import sys
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urllib.parse.urlparse(self.path).path.rstrip('/')
        parts = [p for p in path.split('/') if p]
        if parts in ([], ['v2.0']):
            return self._send(200, {'versions': [{
                'id': 'v2.0', 'status': 'CURRENT',
                'links': [{'rel': 'self', 'href': 'http://%s/v2.0/' %
                           self.headers.get('Host', '')}]}]})
        if parts[0] != 'v2.0':
            return self._send(404, {'NeutronError': 'not found'})
        if len(parts) >= 2 and parts[1] == 'quotas':
            return self._send(200, {'quota': {
                'port': -1, 'network': -1, 'subnet': -1, 'floatingip': -1,
                'security_group': -1, 'security_group_rule': -1}})
        if len(parts) == 2:
            collection = parts[1].split('.')[0]
            return self._send(200, {collection: []})
        return self._send(404, {'NeutronError': 'not found'})

    def _refuse(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        self._send(404, {'NeutronError': 'the neutron stand-in only reads'})

    do_POST = do_PUT = do_DELETE = _refuse

    def log_message(self, fmt, *args):
        # NOTE(founders): the request line only: never a header, so never a
        # token.
        sys.stderr.write('neutron-standin: %s\n' % (fmt % args))
        sys.stderr.flush()


def main():
    port = int(sys.argv[1])
    server = http.server.ThreadingHTTPServer(('127.0.0.1', port), Handler)
    server.serve_forever()


if __name__ == '__main__':
    main()
