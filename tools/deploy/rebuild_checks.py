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
"""What every rebuild case shares, the hook's and the filter's alike.

Which server each case rebuilds and to which image; the restart of the
control with another strategy once every server is idle; the state of a
server before its rebuild (back on the plain image if an earlier
strategy accepted the same rebuild); the decision lines the conductors
and the scheduler logged since an offset; and the checks after a
refusal: the server in ERROR on its current image with a fault that
names why (the host's detail for the admin alone), and nothing of the
refused image left in nova's databases.
"""

import os
import re

from processes import Failure

DECISION_RE = re.compile(r'Rebuild image traits decision: (.*)$')
#: The image each case rebuilds to, and the server it rebuilds.
CASE_IMAGE = {'gold': 'gold', 'absent': 'absent', 'nested': 'nested',
              'plain': 'plain', 'placement_down': 'gold', 'vtpm': 'vtpm',
              'volume_backed': 'absent'}
CASE_SERVER = {'nested': 'b', 'volume_backed': 'v'}
#: What the owner reads of a refusal that would name the host's detail.
TENANT_REASON = ("This server's host does not offer what the new image "
                 'requires.')


def _fields(line):
    """``key=value`` pairs of a decision line (detail= runs to the end)."""
    head, _sep, detail = line.partition(' detail=')
    fields = dict(kv.split('=', 1) for kv in head.split() if '=' in kv)
    fields['detail'] = detail
    return fields


class RebuildChecks:
    """The servers' state, the control's logs and what a refusal leaves."""

    def restart_control(self, strategy, scheduler_strategy=None, hook=True):
        for sid in self.servers.values():
            self.wait_idle(sid)
        self.dep.stop_control()
        self.dep.start_control(strategy, scheduler_strategy, hook)

    def wait_idle(self, sid):
        """Until SID has no task state, read in nova's cell database."""
        # NOTE: a query, not a client: each ``openstack`` command costs
        # about 2 s of CPU here, and the API sets the task state before it
        # answers, so the server is never idle too early.
        self.dep.wait_for(
            'server %s without a task' % sid,
            lambda: self.dep.query(
                'SELECT task_state IS NULL FROM nova_cell1.instances '
                'WHERE uuid = %s', (sid,))[0][0], 180, 0.5)

    def wait_settled(self, sid, before):
        """Until SID is idle and, if in ERROR, has a fault newer than BEFORE's.

        nova saves a refused rebuild's ERROR state before it writes the
        fault (``scheduler.utils.set_vm_state_and_notify``), and the
        conductor logs its WARNING after both; the API shows the newest
        fault it finds. Read between them, a server shows an older
        refusal's fault, or none.

        :param before: :meth:`before_rebuild`'s state, with the newest
            fault's id then
        """
        self.wait_idle(sid)
        self.dep.wait_for(
            'the fault of server %s in ERROR' % sid,
            lambda: self.dep.query(
                "SELECT vm_state != 'error' OR EXISTS (SELECT 1 FROM "
                'nova_cell1.instance_faults f WHERE f.instance_uuid = '
                'i.uuid AND f.id > %s) FROM nova_cell1.instances i '
                'WHERE i.uuid = %s', (before['fault'], sid))[0][0], 60, 0.5)

    def last_fault(self, sid):
        """The id of SID's newest fault in nova's cell database, or 0."""
        return self.dep.query(
            'SELECT COALESCE(MAX(id), 0) FROM nova_cell1.instance_faults '
            'WHERE instance_uuid = %s', (sid,))[0][0]

    @staticmethod
    def image_id(server):
        """The server's image id; '' for a volume-backed server."""
        image = server.get('image')
        if isinstance(image, dict):
            return image.get('id')
        if not image or 'booted from volume' in image:
            # nova's API answers "", the client "N/A (booted from volume)".
            return ''
        match = re.search(r'\(([0-9a-f-]{36})\)', image or '')
        return match.group(1) if match else image

    def log_size(self, name):
        return os.path.getsize(self.dep.control_logs[name])

    def log_offsets(self):
        return {n: self.log_size(n) for n in self.dep.control_logs}

    def log_since(self, name, offset):
        with open(self.dep.control_logs[name], errors='replace') as f:
            f.seek(offset)
            return f.read()

    @staticmethod
    def decisions_in(text):
        """The fields of each decision line in TEXT."""
        return [_fields(m.group(1)) for m in map(
            DECISION_RE.search, text.splitlines()) if m]

    def decisions_since(self, name, offset):
        return self.decisions_in(self.log_since(name, offset))

    def before_rebuild(self, sid, image):
        """Wait for SID to be idle; its image, and nova's database rows.

        The rows are :meth:`.NovaDb.image_state`'s, and ``fault``, the id
        of the newest fault (:meth:`wait_settled`).
        """
        dep = self.dep
        self.wait_idle(sid)
        before = dep.image_state(sid)
        if before['image_ref'] == image:
            # An earlier strategy accepted this very rebuild: a rebuild to
            # the image the server already has changes no image, and nova
            # checks nothing, so go back to the plain image first.
            dep.osc('demo', 'server', 'rebuild', '--image',
                    self.images['plain'], sid)
            self.wait_idle(sid)
            before = dep.image_state(sid)
            if before['image_ref'] != self.images['plain']:
                raise Failure('%s: could not go back to the plain '
                              'image' % sid)
        before['fault'] = self.last_fault(sid)
        return before['image_ref'], before

    def refused(self, shown, old_image, named):
        """What is wrong with SHOWN, a server whose rebuild was refused."""
        problems = []
        if shown['status'] != 'ERROR':
            problems.append('not refused: %s' % shown['status'])
        if self.image_id(shown) != old_image:
            problems.append('image not rolled back: %r, wanted %r' % (
                self.image_id(shown), old_image))
        fault = (shown.get('fault') or {}).get('message', '')
        if named is not None and named not in fault:
            problems.append('the fault does not name %s: %r' % (
                named, fault))
        return problems

    def host_detail(self, sid, shown, named):
        """Who reads NAMED, the host's detail of a refused rebuild.

        SHOWN is the server as its owner (``demo``) reads it: its fault
        names nothing of the host. An admin reads NAMED in the fault's
        details, which nova shows to admins only.
        """
        problems = []
        fault = shown.get('fault') or {}
        if named in repr(fault):
            problems.append('the owner reads %s in the fault: %r' % (
                named, fault))
        if TENANT_REASON not in fault.get('message', ''):
            problems.append("the owner's fault is not the tenant's "
                            'reason: %r' % fault.get('message'))
        admin = self.admin('server', 'show', sid).get('fault') or {}
        if named not in (admin.get('details') or ''):
            problems.append("the admin's fault details do not name %s: "
                            '%r' % (named, admin))
        return problems

    def leftovers(self, sid, before, old_image, refused):
        """What nova's databases keep of the refused image, as problems.

        After a refusal, the instance's image_ref, the ``image_*`` keys
        of its system metadata and its request spec's image must be those
        of its current image (a volume-backed server: an empty image_ref,
        the root volume's image in the request spec), and nothing may
        name the refused image.
        """
        after = self.dep.image_state(sid)
        problems = []
        if after['image_ref'] != old_image:
            problems.append('instances.image_ref is %r, wanted %r' % (
                after['image_ref'], old_image))
        if after['sysmeta'] != before['sysmeta']:
            keys = sorted(k for k in set(after['sysmeta']) |
                          set(before['sysmeta'])
                          if after['sysmeta'].get(k) !=
                          before['sysmeta'].get(k))
            problems.append('image_* system metadata changed: %s' % ', '.join(
                '%s=%r (was %r)' % (k, after['sysmeta'].get(k),
                                    before['sysmeta'].get(k))
                for k in keys))
        if refused in repr(after['sysmeta']):
            problems.append('the system metadata names the refused image')
        current = old_image or self.volume_image
        if after['spec_image'] != current:
            problems.append('the request spec has image %s, wanted %s' % (
                after['spec_image'], current))
        if refused in (after['spec'] or ''):
            problems.append('the request spec names the refused image')
        return problems
