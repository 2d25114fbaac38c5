#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""A small HTTP client that writes to placement, for the cloud builder.

The decision path reads placement through keystoneauth
(:mod:`nova_image_traits.placement`); building a simulated cloud writes, as
an admin with a token, from several threads at once, over plain
``requests`` sessions, one per thread.
"""

import threading

import requests

from nova_image_traits.placement import query

#: Highest microversion the builder speaks.
MAX_MICROVERSION = (1, 39)
#: Lowest: consumer generations in PUT /allocations arrived in 1.28.
MIN_MICROVERSION = (1, 28)
#: Per-request timeout in seconds.
TIMEOUT = 30


class PlacementRequestError(Exception):
    """Placement answered with a status the builder did not expect."""

    def __init__(self, method, path, status, body):
        """Describe the failed request.

        :param method: HTTP method
        :param path: request path with query
        :param status: HTTP status received, kept as :attr:`status`
        :param body: response body text
        """
        self.status = status
        super().__init__('%s %s returned %s: %s' % (method, path, status,
                                                    body))


class _ThreadSession(threading.local):
    """A ``requests.Session`` for each thread."""

    def __init__(self):
        self.session = requests.Session()


class PlacementHTTP:
    """Requests to one placement, at the highest common microversion.

    :param endpoint: placement base URL, e.g. ``http://127.0.0.1:PORT``
    :param token: value of the ``X-Auth-Token`` header
    """

    def __init__(self, endpoint, token='admin'):
        self.endpoint = endpoint.rstrip('/')
        self.token = token
        self._version = None
        self._local = _ThreadSession()

    @property
    def microversion(self):
        """The negotiated microversion as ``(major, minor)``."""
        if self._version is None:
            resp = self._local.session.get(self.endpoint + '/',
                                           timeout=TIMEOUT)
            if resp.status_code != 200:
                raise PlacementRequestError('GET', '/', resp.status_code,
                                            resp.text)
            server_max = query.parse_version(
                resp.json()['versions'][0]['max_version'])
            version = min(server_max, MAX_MICROVERSION)
            if version < MIN_MICROVERSION:
                raise PlacementRequestError(
                    'GET', '/', resp.status_code,
                    'builder needs microversion >= %d.%d, server offers '
                    '%d.%d' % (MIN_MICROVERSION + server_max))
            self._version = version
        return self._version

    def request(self, method, path, body=None, expect=(200,),
                headers=None):
        """Send one request and check its status.

        :param method: HTTP method
        :param path: path below the endpoint, with query string
        :param body: JSON-serialisable request body, or None
        :param expect: acceptable status codes
        :param headers: extra request headers
        :returns: the decoded JSON body, or None when there is none
        :raises PlacementRequestError: on any other status
        """
        headers = dict(headers or {}, **{
            'X-Auth-Token': self.token,
            'OpenStack-API-Version': 'placement %d.%d' % self.microversion,
            'Accept': 'application/json',
        })
        resp = self._local.session.request(
            method, self.endpoint + path, json=body, headers=headers,
            timeout=TIMEOUT)
        if resp.status_code not in expect:
            raise PlacementRequestError(method, path, resp.status_code,
                                        resp.text)
        if resp.content and resp.headers.get(
                'Content-Type', '').startswith('application/json'):
            return resp.json()
        return None

    def get(self, path):
        """GET ``path`` and return the decoded body.

        :param path: path below the endpoint, with query string
        """
        return self.request('GET', path)
