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
"""``audit images --same-image-rebuilds``: what the pre-check would refuse.

With ``[image_traits] judge_same_image_rebuild``, the nova-api pre-check
judges a rebuild with the server's own image when the image's properties
changed since the server recorded them in its ``image_*`` system metadata
(:mod:`nova_image_traits.api.same_image`). nova's API shows no system
metadata, so this command cannot compare properties. It compares times,
which the APIs do show:

* when the image last changed: the image service's ``updated_at`` (nova's
  image API: ``updated``);
* when the server last recorded its image's properties: nova writes them
  when the server is created and at each rebuild, each of which starts a
  ``create`` or ``rebuild`` instance action
  (``GET /servers/{id}/os-instance-actions``).

A server whose image was updated after that is judged as the pre-check
judges a changed image: the image's current properties, on the server's
host, by the configured strategy. It is listed when the strategy refuses
it. That is an upper bound: an update of something nova does not read (a
description, a tag, the name) counts here, not in the pre-check; and the
recorded properties are unknown here, so ``reject`` counts every
requirement the flavor does not make as new. An image updated before the
server recorded it is not judged, as the pre-check would not judge it.

Cost. The servers are listed once. One ``os-instance-actions`` request per
server whose image was updated after the server was created (none
otherwise), and one decision, with its placement requests, per server whose
image was updated since it recorded it. Volume-backed servers are counted,
not judged: nova's API names no image for them.
"""

import dataclasses

from openstack import exceptions as openstack_exc
from oslo_log import log as logging
from oslo_utils import timeutils

from nova_image_traits import cli
from nova_image_traits.cli import cloud as nit_cloud
from nova_image_traits.cli import prefetch
from nova_image_traits import decision as nit_decision

LOG = logging.getLogger(__name__)

COLUMNS = ('Server', 'Name', 'Host', 'Image', 'Image Updated', 'Recorded',
           'Strategy', 'Outcome', 'Missing', 'Reason')
#: The instance actions at which nova records the image's properties.
RECORDING_ACTIONS = frozenset(['create', 'rebuild'])


@dataclasses.dataclass
class Stats:
    """What a preview did, for the summary line."""
    servers: int = 0
    updated: int = 0
    refused: int = 0
    failed: int = 0
    volume_backed: int = 0
    requests: int = 0


def parse_time(value):
    """A naive UTC ``datetime`` from an API's ISO 8601 string, or None."""
    if not value:
        return None
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(str(value)))
    except ValueError:
        return None


def recorded_at(conn, server):
    """When ``server`` last recorded its image's properties, or None."""
    starts = [parse_time(a.start_time)
              for a in conn.compute.server_actions(server)
              if a.action in RECORDING_ACTIONS]
    return max([s for s in starts if s is not None], default=None)


class Preview:
    """Judge the servers of ``images`` as a same-image rebuild would be.

    :param conn: an ``openstack.connection.Connection`` with admin rights
    :param conf: the ConfigOpts holding ``[image_traits]``
    :param source: where image properties are read
    """

    def __init__(self, conn, conf, source):
        self.conn, self.conf = conn, conf
        self.cloud = nit_cloud.Cloud(conn, conf, source)
        self.cloud.client = prefetch.CachingClient(self.cloud.client)
        self.stats = Stats()

    def rows(self, images):
        """The rows of the servers the pre-check would refuse."""
        by_id = {image.id: image for image in images}
        rows = []
        try:
            servers = list(self.cloud.servers())
        except openstack_exc.ForbiddenException as e:
            raise cli.UsageError(
                '--same-image-rebuilds reads the servers of every project, '
                'which needs an administrator: the compute API answered '
                '403 (%s)' % e.details)
        for server in servers:
            current = nit_cloud.image_id(server)
            if current is None:
                self.stats.volume_backed += 1
            elif current in by_id:
                self.stats.servers += 1
                rows.extend(self._server(server, by_id[current]))
        self.stats.requests = self.cloud.client.sent
        return rows

    def summary(self, images):
        s = self.stats
        off = ('' if self.conf.image_traits.judge_same_image_rebuild else
               ' (judge_same_image_rebuild is off in this configuration)')
        return ('audit images --same-image-rebuilds: %d servers run the %d '
                'images; %d with an image updated since they recorded it; '
                '%d would be refused%s, %d could not be judged; %d '
                'volume-backed servers not judged; %d placement requests\n'
                % (s.servers, len(images), s.updated, s.refused, off,
                   s.failed, s.volume_backed, s.requests))

    def _server(self, server, image):
        updated = parse_time(image.updated_at)
        created = parse_time(server.created_at)
        if updated is not None and created is not None and updated <= created:
            return []
        recorded = recorded_at(self.conn, server)
        if updated is not None and recorded is not None and (
                updated <= recorded):
            return []
        self.stats.updated += 1
        if not server.compute_host or not server.hypervisor_hostname:
            return []  # never launched: the pre-check leaves it to nova
        strategy = self.conf.image_traits.strategy
        row = (server.id, server.name, server.compute_host, image.id,
               image.updated_at or 'unknown',
               recorded.isoformat() if recorded else 'unknown', strategy)
        try:
            request = self.cloud.request(server, image.properties, None,
                                         lookup=True)
            decision = cli.decide(request, self.conf, self.cloud.client,
                                  strategy)
        except nit_cloud.ServiceUnavailable:
            raise
        except Exception as e:
            LOG.warning('Cannot judge server %(s)s: %(e)s',
                        {'s': server.id, 'e': e})
            self.stats.failed += 1
            return [row + ('error', '-', cli.cut(str(e), 160))]
        if decision.allowed:
            return []
        if decision.outcome == nit_decision.ERROR:
            self.stats.failed += 1
        else:
            self.stats.refused += 1
        return [row + (decision.outcome, cli.join(decision.missing),
                       cli.short_reason(decision))]
