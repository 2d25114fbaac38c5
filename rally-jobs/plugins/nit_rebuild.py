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
"""Rally plugins: concurrent rebuilds to accepted and refused images.

Loaded by Rally (``rally --plugin-paths rally-jobs/plugins``), in Rally's
own virtualenv; nothing of nova-image-traits is imported here.

``nit_rebuild_servers`` (context) boots the servers once, as the user,
checks as an admin that each is on the one host the caller left enabled,
and leaves them for the caller to check and delete (``keep``).

``NovaImageTraits.rebuild_accepted_refused`` (scenario) takes a server
no other iteration holds, rebuilds it to an accepted image (one of two,
never the image it has), waits for ACTIVE, then rebuilds it to the
refused image. Only the ``POST /servers/{id}/action`` of each rebuild is
in the atomic actions ``nit.rebuild_accepted`` and ``nit.rebuild_refused``;
the waits are timed apart. The expected refusal is a success: a 400 from
nova-api's pre-check (the server stays ACTIVE on its image), or, with
``refusal: error``, a 202 and then ERROR on its image (the conductor's
hook or the scheduler's filter). After ERROR an admin resets the server
to ACTIVE (``reset-state --active``), and the next iteration's accepted
rebuild rebuilds it for real. Anything else raises: an error for Rally.
"""

import datetime
import fcntl
import os
import tempfile
import time

from rally.common import logging
from rally.task import atomic
from rally_openstack.common import osclients
from rally_openstack.task import context
from rally_openstack.task import scenario

LOG = logging.getLogger(__name__)
#: Compute API microversion of every call (2.95: nova's newest here).
MICROVERSION = '2.95'
POLL = 0.5
TIMEOUT = 300


class UnexpectedResult(Exception):
    pass


def _nova(clients):
    return clients.nova(MICROVERSION)


def _wait(nova, sid, done, what):
    """Poll SID until DONE(server) is true, or raise after TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        server = nova.servers.get(sid)
        if getattr(server, 'OS-EXT-STS:task_state', None) is None and (
                done(server)):
            return server
        if time.monotonic() > deadline:
            raise UnexpectedResult('%s: not %s after %d s: %s' % (
                sid, what, TIMEOUT, server.status))
        time.sleep(POLL)


def _utcnow():
    """Now, in UTC to the second, as nova's API writes a fault's time."""
    return datetime.datetime.now(
        datetime.timezone.utc).replace(microsecond=0, tzinfo=None)


def _fault_since(server, since):
    """SERVER's fault if nova wrote it at SINCE or later, else None.

    nova saves a refused rebuild's ERROR state before it writes the fault
    (``scheduler.utils.set_vm_state_and_notify``), and the API shows the
    newest fault it finds: a server refused before shows the older one.
    To the second only: an older fault of SINCE's own second passes, which
    needs a refusal, a reset and an accepted rebuild within that second.
    """
    fault = getattr(server, 'fault', None) or {}
    try:
        created = datetime.datetime.strptime(
            str(fault.get('created', ''))[:19], '%Y-%m-%dT%H:%M:%S')
    except ValueError:
        return None
    return fault if created >= since else None


@context.configure(name='nit_rebuild_servers', platform='openstack',
                   order=431)
class RebuildServers(context.OpenStackContext):
    """Boot SERVERS servers per project once, as its user; each on HOST.

    HOST must be the only enabled compute service: the caller disables
    the others (an owner cannot choose a host).
    """

    CONFIG_SCHEMA = {
        'type': 'object',
        'properties': {
            'image': {'type': 'string'},
            'flavor': {'type': 'string'},
            'servers': {'type': 'integer', 'minimum': 1},
            'host': {'type': 'string'},
            'keep': {'type': 'boolean'},
        },
        'required': ['image', 'flavor', 'servers', 'host'],
        'additionalProperties': False,
    }

    def setup(self):
        admin = _nova(osclients.Clients(self.context['admin']['credential']))
        self.context['nit_lock_dir'] = tempfile.mkdtemp(prefix='nit-rally-')
        for user, tenant_id in self._iterate_per_tenants():
            nova = _nova(osclients.Clients(user['credential']))
            nova.servers.create(
                'nit-load-%s' % self.context['task']['uuid'][:8],
                self.config['image'], self.config['flavor'], nics='none',
                min_count=self.config['servers'],
                max_count=self.config['servers'])
            prefix = 'nit-load-%s' % self.context['task']['uuid'][:8]
            servers = [s for s in nova.servers.list()
                       if s.name.startswith(prefix)]
            for s in servers:
                shown = _wait(nova, s.id, lambda s: s.status in (
                    'ACTIVE', 'ERROR'), 'booted')
                if shown.status != 'ACTIVE':
                    raise UnexpectedResult('%s booted %s' % (
                        s.id, shown.status))
                # The owner cannot read the host: the admin can.
                host = getattr(admin.servers.get(s.id),
                               'OS-EXT-SRV-ATTR:host')
                if host != self.config['host']:
                    raise UnexpectedResult('%s booted on %s, not %s' % (
                        s.id, host, self.config['host']))
            self.context['tenants'][tenant_id]['nit_servers'] = sorted(
                s.id for s in servers)
            LOG.info('booted %d servers', len(servers))

    def cleanup(self):
        if self.config.get('keep'):
            return
        for user, tenant_id in self._iterate_per_tenants():
            nova = _nova(osclients.Clients(user['credential']))
            for sid in self.context['tenants'][tenant_id].get(
                    'nit_servers', ()):
                nova.servers.delete(sid)


@scenario.configure(name='NovaImageTraits.rebuild_accepted_refused')
class RebuildAcceptedRefused(scenario.OpenStackScenario):
    """One accepted and one refused rebuild of a server of the context.

    Rally's ``users`` context gives it the environment's existing user
    (the servers' owner) and its admin.
    """

    def _admin_nova(self):
        return self.admin_clients('nova', MICROVERSION)

    def _nova(self):
        return self.clients('nova', MICROVERSION)

    def _hold_server(self):
        """A server of the context that no other iteration holds."""
        servers = self.context['tenant']['nit_servers']
        first = self.context['iteration'] % len(servers)
        for i in range(len(servers)):
            sid = servers[(first + i) % len(servers)]
            fd = os.open(os.path.join(self.context['nit_lock_dir'], sid),
                         os.O_CREAT | os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return sid, fd
            except OSError:
                os.close(fd)
        raise UnexpectedResult('every server is held: run fewer at once '
                               'than there are servers')

    def run(self, accepted, refused, refused_trait, owner_reads,
            refusal='precheck'):
        """Rebuild to an accepted image, then to REFUSED.

        :param accepted: two image ids, either accepted on the host
        :param refused: an image id, refused on the host
        :param refused_trait: the trait REFUSED requires; no refusal that
            its owner reads may name it
        :param owner_reads: what the refusal tells the server's owner
        :param refusal: ``precheck`` (a 400, the server stays ACTIVE) or
            ``error`` (a 202, then the server in ERROR)
        """
        sid, fd = self._hold_server()
        try:
            self._rebuild_pair(sid, accepted, refused, refused_trait,
                               owner_reads, refusal)
        finally:
            os.close(fd)

    def _rebuild_pair(self, sid, accepted, refused, refused_trait,
                      owner_reads, refusal):
        nova = self._nova()
        server = nova.servers.get(sid)
        if server.status != 'ACTIVE':
            raise UnexpectedResult('%s is %s before the iteration' % (
                sid, server.status))
        image = [i for i in accepted if i != server.image['id']][0]
        with atomic.ActionTimer(self, 'nit.rebuild_accepted'):
            nova.servers.rebuild(sid, image)
        with atomic.ActionTimer(self, 'nit.wait_rebuilt'):
            server = _wait(nova, sid, lambda s: s.status in (
                'ACTIVE', 'ERROR'), 'rebuilt')
        if server.status != 'ACTIVE' or server.image['id'] != image:
            raise UnexpectedResult('accepted rebuild of %s to %s: %s on %s'
                                   % (sid, image, server.status,
                                      server.image['id']))
        refused_by = 'error'
        since = _utcnow()
        with atomic.ActionTimer(self, 'nit.rebuild_refused'):
            try:
                nova.servers.rebuild(sid, refused)
            except Exception as e:
                if getattr(e, 'code', None) != 400:
                    raise
                refused_by, message = 'precheck', str(e)
        if refused_by != refusal:
            raise UnexpectedResult('rebuild of %s to %s: wanted a %s '
                                   'refusal, got %s' % (sid, refused,
                                                        refusal, refused_by))
        if refusal == 'precheck':
            server = nova.servers.get(sid)
            if server.status != 'ACTIVE':
                raise UnexpectedResult('%s is %s after the 400' % (
                    sid, server.status))
        else:
            with atomic.ActionTimer(self, 'nit.wait_refused'):
                server = _wait(nova, sid, lambda s: s.status == 'ACTIVE' or (
                    s.status == 'ERROR' and _fault_since(s, since)),
                    'refused')
            if server.status != 'ERROR':
                raise UnexpectedResult('rebuild of %s to %s: %s, not '
                                       'refused' % (sid, refused,
                                                    server.status))
            message = repr(_fault_since(server, since))
        if server.image['id'] != image:
            raise UnexpectedResult('%s is on image %s after the refusal, '
                                   'not %s' % (sid, server.image['id'],
                                               image))
        if refused_trait in message or owner_reads not in message:
            raise UnexpectedResult('the owner reads %r' % message)
        if refusal == 'error':
            # By design the refused server is in ERROR; the next iteration
            # needs it ACTIVE, and its accepted rebuild rebuilds it.
            with atomic.ActionTimer(self, 'nit.reset_state'):
                self._admin_nova().servers.reset_state(sid, 'active')
