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
"""One decision's placement requests: counted, bounded, errors named."""

import re
import time

from keystoneauth1 import exceptions as ks_exc

from nova_image_traits import exception
from nova_image_traits.placement import query

# NOTE(founders): placement answers 400 "No such trait(s): A, B." for unknown
# traits in a required parameter (placement.exception.TraitNotFound).
_UNKNOWN_TRAITS = re.compile(r'No such trait\(s\): ([A-Z0-9_, ]+)')


class PlacementSession:
    """Placement requests made for one decision, counted and time-bounded.

    :ivar requests: the number of requests asked so far, answered or not
    :ivar known: the number of reads answered without a request, by a
        traits answer whose generation placement confirmed
        (:mod:`.known_traits`)
    """

    def __init__(self, client, timeout, max_url_length, version_ttl=None,
                 global_request_id=None, deadline=None):
        self.client = client
        self.requests = 0
        self.known = 0
        self._deadline = time.monotonic() + timeout
        if deadline is not None:
            # NOTE(founders): a decision that began earlier (the pre-check
            # waited for the compute node): its timeout counts from then.
            self._deadline = min(self._deadline, deadline)
        self._timeout = timeout
        self._max_url_length = max_url_length
        self._version_ttl = version_ttl
        self._renegotiated = False
        self.global_request_id = global_request_id

    def max_version(self):
        return self.client.max_version(self, self._version_ttl)

    def supports(self, version):
        """Whether placement supports microversion ``version`` ('1.31')."""
        return self.max_version() >= query.parse_version(version)

    def build_url(self, path, params=None):
        """Return ``path`` with ``params`` URL-encoded, checked for length.

        :param path: the path, every variable part already quoted
        :param params: a list of (name, value) pairs
        :raises: RequestTooLarge
        """
        url = path
        if params:
            url += '?' + query.urlencode(params)
        if len(url) > self._max_url_length:
            raise exception.RequestTooLarge(length=len(url),
                                            limit=self._max_url_length)
        return url

    def get(self, path, params=None, version='1.0'):
        """GET ``path`` and return the decoded JSON body.

        :raises: PlacementError subclasses naming the cause
        """
        url = self.build_url(path, params)
        if (self._deadline - time.monotonic() <= 0 and
                not self.client.answered(url, version)):
            raise exception.DecisionDeadlineExceeded(
                limit=self._timeout, waiting='before its next request')
        resp = None
        try:
            resp = self.client.request(url, version, self._deadline,
                                       self._timeout,
                                       self.global_request_id)
        except (ks_exc.ConnectTimeout, ks_exc.RequestTimeout) as e:
            raise exception.PlacementTimeout(url=url, why=_why(e))
        except (ks_exc.ConnectFailure, ks_exc.DiscoveryFailure) as e:
            raise exception.PlacementUnreachable(url=url, why=_why(e))
        except (ks_exc.EndpointNotFound, ks_exc.SSLError) as e:
            # Not found in the catalog, or TLS refused: configuration.
            err = exception.PlacementUnreachable(url=url, why=_why(e))
            err.transient = False
            raise err
        except ks_exc.UnknownConnectionError as e:
            # requests' ChunkedEncodingError and friends: the body was cut
            # short or could not be decoded.
            raise exception.PlacementMalformedResponse(url=url, why=_why(e))
        except ks_exc.ClientException as e:
            raise exception.PlacementError(why=_why(e))
        finally:
            # NOTE(founders): everything but a kept answer
            # (known_traits.KnownAnswer) counts as asked, answered or not.
            if getattr(resp, 'known', False) is True:
                self.known += 1
            else:
                self.requests += 1
        if (resp.status_code == 406 and version is not None and
                not self._renegotiated):
            self._version_refused(url, version)
        if resp.status_code != 200:
            raise _http_error(url, resp)
        try:
            body = resp.json()
        except ValueError as e:
            raise exception.PlacementMalformedResponse(
                url=url, why='invalid JSON (%s)' % e)
        if not isinstance(body, dict):
            raise exception.PlacementMalformedResponse(
                url=url, why='the body is not a JSON object')
        return body

    def _version_refused(self, url, version):
        """Placement refused ``version``: was it rolled back?

        Negotiates again (once per decision). When placement no longer
        supports ``version``, raises PlacementVersionChanged so that the
        strategy can ask again with what placement supports now; otherwise
        returns and the 406 is an error.
        """
        self._renegotiated = True
        self.client.forget_version()
        top = self.max_version()
        if top < query.parse_version(version):
            raise exception.PlacementVersionChanged(
                url=url, version=version,
                max_version=query.format_version(top))


def _why(exc):
    return '%s: %s' % (type(exc).__name__, exc)


def _http_error(url, resp):
    try:
        errors = resp.json().get('errors') or []
        why = '; '.join(str(e.get('detail') or e.get('title') or '')
                        for e in errors) or resp.reason
    except Exception:
        why = resp.reason or 'no error document'
    why = str(why).strip().replace('\n', ' ')
    # NOTE(founders): before shortening: the names may be long and many.
    unknown = _UNKNOWN_TRAITS.search(why)
    why = why[:300]
    if resp.status_code == 400 and unknown:
        names = sorted(n.strip() for n in unknown.group(1).split(',')
                       if n.strip())
        return exception.PlacementUnknownTraits(names=', '.join(names))
    if resp.status_code == 406:
        err = exception.PlacementBadResponse(
            url=url, status=406, why='microversion not supported: %s' % why)
        err.cause = 'unsupported-microversion'
        return err
    return exception.PlacementBadResponse(url=url, status=resp.status_code,
                                          why=why)
