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
"""One isolated-aggregate case: compute1 reserved for the gold trait.

As nova's admin guide sets it up ("Filtering hosts by isolating
aggregates"): ``[scheduler] enable_isolated_aggregate_filtering = True``
in nova-api's, the super conductor's and nova-scheduler's configuration
(``deploy.py`` turns it on for the last strategy's control, and nova-api
reads it when it restarts with the pre-check), and an aggregate
``nit-gold`` with metadata ``trait:CUSTOM_NIT_GOLD=required`` holding
compute1, which nova-api mirrors into placement. A boot of an image that
does not require the gold trait may not land on compute1; nova checks
that first (an admin's boot of the plain image asked onto compute1 ends
in "No valid host"), and then ``nit-g``, booted on compute1 from the gold
image, is rebuilt by its owner ``demo``:

* with the hook (nova-api without the pre-check yet), to the plain image:
  refused, the server in ERROR on the gold image, nothing of the plain
  image left, the owner's fault naming nothing of the host, and one
  decision line in the super conductor with cause ``isolated-aggregate``
  naming the aggregate and compute1's provider; none in the scheduler;
* with the hook, to ``nit-gold2``, which requires the gold trait too:
  accepted by the hook and by ImageTraitsFilter;
* with the pre-check, to the plain image: a 400 for the owner (the
  tenant's reason) and for an admin (the host's detail), the server
  untouched, and the two decision lines in nova-api's log only.

Then the aggregate loses its metadata, so that nothing is isolated when
tempest boots the plain image on both computes. Every other case runs with
no isolating aggregate: the last strategy's cases with the option on, the
other strategies' with it off (nova's default).
"""

import os

from cloud_contents import TRAITS
from processes import Failure
from rebuild_checks import TENANT_REASON

AGGREGATE = 'nit-gold'
HOST = 'compute1'
CAUSE = 'isolated-aggregate'
#: What an admin reads of the refusal, and the owner must not.
HOST_DETAIL = 'reserved for images'
NO_HOST = 'No valid host'


class IsolationCase:
    """compute1 isolated for the gold trait, and the rebuilds of nit-g."""

    def isolate(self):
        """The aggregate, compute1 in it, and the same in placement."""
        dep = self.dep
        prop = 'trait:%s=required' % TRAITS['gold']
        made = self.admin('aggregate', 'create', '--property', prop,
                          AGGREGATE)
        dep.osc('admin', 'aggregate', 'add', 'host', AGGREGATE, HOST)
        # nova-api mirrors the membership into placement, where a boot is
        # judged and where the package reads it (read in placement's
        # database, one query).
        found = [row[0] for row in dep.query(
            'SELECT a.uuid FROM placement.resource_provider_aggregates ra '
            'JOIN placement.placement_aggregates a ON a.id = ra.aggregate_id '
            'JOIN placement.resource_providers rp '
            'ON rp.id = ra.resource_provider_id WHERE rp.uuid = %s',
            (self.roots[HOST],))]
        if len(found) != 1 or made.get('uuid') not in (None, found[0]):
            raise Failure('%s in placement is in the aggregates %r, wanted '
                          '%s only' % (HOST, found, made.get('uuid')))
        self.aggregate = found[0]
        dep.note('%s (%s, %s) holds %s' % (AGGREGATE, self.aggregate,
                                           prop, HOST))
        self.nova_refuses_a_plain_boot()

    def nova_refuses_a_plain_boot(self):
        """An admin's boot of the plain image asked onto compute1 fails."""
        dep = self.dep
        # A compute silent for 60 s is down for the scheduler, which would
        # refuse the boot for that instead.
        dep.wait_computes_report()
        sid = self.admin('server', 'create', '--flavor', 'm1.nit',
                         '--image', self.images['plain'], '--nic', 'none',
                         '--host', HOST, 'nit-isolated-boot')['id']
        # A server no cell took is in cell0, with its fault. The conductor
        # creates it there still building, then saves it in ERROR, then
        # writes the fault: only the fault says it is settled.
        rows = dep.wait_for('nit-isolated-boot placed or refused', lambda: (
            dep.query(
                'SELECT i.vm_state, i.host, f.message FROM nova_cell0.'
                'instances i JOIN nova_cell0.instance_faults f ON '
                'f.instance_uuid = i.uuid WHERE i.uuid = %s', (sid,)) or
            dep.query('SELECT vm_state, host, NULL FROM nova_cell1.instances '
                      "WHERE uuid = %s AND vm_state != 'building'", (sid,))),
            120, 1)
        dep.osc('admin', 'server', 'delete', sid)
        if rows[0][0] != 'error' or NO_HOST not in (rows[0][2] or ''):
            raise Failure('the plain image asked onto the isolated %s: %r'
                          % (HOST, rows))

    def isolation_lines(self, offsets, sid, strategy, allowed):
        """What is wrong with the decision lines since OFFSETS."""
        problems = []
        lines = self.decisions_since('super-conductor',
                                     offsets['super-conductor'])
        cell = self.decisions_since('cell1-conductor',
                                    offsets['cell1-conductor'])
        sched = self.decisions_since('scheduler', offsets['scheduler'])
        # The filter decides only what the hook accepted.
        if len(lines) != 1 or cell or len(sched) != int(allowed):
            return ['%d, %d and %d decision lines in the super conductor, '
                    'the cell conductor and the scheduler, wanted 1, 0 and '
                    '%d' % (len(lines), len(cell), len(sched), allowed)]
        for d in lines + sched:
            if (d.get('strategy') != strategy or d.get('instance') != sid or
                    d.get('allowed') != str(allowed)):
                problems.append('decision line %r' % d)
        problems += self.isolation_refusal_line(lines[0], allowed)
        return problems

    def isolation_refusal_line(self, line, allowed=False):
        """What is wrong with the decision LINE of a refusal for isolation."""
        if allowed:
            return [] if line.get('cause') == '-' else [
                'accepted with cause %r' % line.get('cause')]
        if (line.get('cause') != CAUSE or
                line.get('providers') != self.roots[HOST] or
                self.aggregate not in line['detail']):
            return ['the decision line does not name %s, %s and %s: %r' % (
                CAUSE, self.roots[HOST], self.aggregate, line)]
        return []

    def run_isolation_hook(self, strategy):
        """With the hook: the plain image refused, gold2 accepted."""
        dep = self.dep
        sid = self.servers['g']
        failed = []
        for image, allowed in (('plain', False), ('gold2', True)):
            image_id = self.images[image]
            old_image, db_before = self.before_rebuild(sid, image_id)
            offsets = self.log_offsets()
            dep.osc('demo', 'server', 'rebuild', '--image', image_id, sid)
            self.wait_settled(sid, db_before)
            if allowed:
                shown = self.vm_state(sid)
                problems = [] if shown == {'status': 'ACTIVE',
                                           'image': image_id} else [
                    'not rebuilt: %r' % shown]
            else:
                shown = self.user('server', 'show', sid)
                problems = self.refused(shown, old_image, None)
                problems += self.host_detail(sid, shown, HOST_DETAIL)
                problems += self.leftovers(sid, db_before, old_image,
                                           image_id)
            problems += self.isolation_lines(offsets, sid, strategy,
                                             allowed)
            if shown['status'] == 'ERROR':
                dep.reset_to_active(sid)
            failed += self.isolation_result('hook', image, allowed,
                                            problems)
        if failed:
            raise Failure('isolated aggregate, with the hook: %s failed'
                          % ', '.join(failed))

    def run_isolation_precheck(self):
        """With the pre-check: the plain image refused with a 400."""
        dep = self.dep
        sid = self.servers['g']
        image = self.images['plain']
        self.wait_idle(sid)
        before = dep.image_state(sid)
        offsets = self.log_offsets()
        api_log = dep.procs['nova-api'][1]
        api_offset = os.path.getsize(api_log)
        problems = []
        # The owner reads the tenant's reason; an admin the host's detail.
        for who, wanted, unwanted in (('demo', TENANT_REASON, HOST_DETAIL),
                                      ('admin', HOST_DETAIL, None)):
            proc = dep.osc(who, 'server', 'rebuild', '--image', image, sid,
                           check=False)
            said = ' '.join((proc.stdout + proc.stderr).split())
            if not proc.returncode or '400' not in said:
                problems.append('%s: no 400: %r' % (who, said))
            elif wanted not in said or (unwanted and unwanted in said):
                problems.append('%s reads %r' % (who, said))
        shown = self.vm_state(sid)
        after = dep.image_state(sid)
        if shown['status'] != 'ACTIVE' or after != before:
            problems.append('the server changed: %r, %r (was %r)' % (
                shown, after, before))
        with open(api_log, errors='replace') as f:
            f.seek(api_offset)
            text = f.read()
        lines = self.decisions_in(text)
        if len(lines) != 2 or any(d.get('instance') != sid or
                                  d.get('allowed') != 'False'
                                  for d in lines):
            problems.append('decision lines in nova-api: %r' % lines)
        else:
            problems += self.isolation_refusal_line(lines[0])
        later = [n for n, at in offsets.items()
                 if self.decisions_since(n, at)]
        if later:
            problems.append('decision lines in %s' % ', '.join(later))
        # Nothing isolated any more, for tempest's boots.
        dep.osc('admin', 'aggregate', 'unset', '--property',
                'trait:%s' % TRAITS['gold'], AGGREGATE)
        if self.isolation_result('pre-check', 'plain', False, problems):
            raise Failure('isolated aggregate, with the pre-check: failed')

    def vm_state(self, sid):
        """SID's status as the API shows it when idle, and its image."""
        state, image = self.dep.query(
            'SELECT vm_state, image_ref FROM nova_cell1.instances '
            'WHERE uuid = %s', (sid,))[0]
        return {'status': state.upper(), 'image': image}

    def isolation_result(self, where, image, allowed, problems):
        """Note one rebuild's result; return [its label] when it failed."""
        want = 'accept' if allowed else 'refuse'
        result = 'ok' if not problems else 'FAILED: ' + '; '.join(problems)
        label = 'isolated/%s' % where
        self.results.append((label, image, want, result))
        self.dep.note('%-20s %-15s %-7s %s' % (label, image, want, result))
        return ['%s to %s' % (where, image)] if problems else []
