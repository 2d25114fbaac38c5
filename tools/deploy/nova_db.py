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
"""What the deployment reads directly in nova's databases.

One SELECT a question, with pymysql as the job's own database user:
whether both computes reported their state since the conductors and the
scheduler were last started, and what nova keeps of a server's image
(``instances.image_ref``, the ``image_*`` keys of
``instance_system_metadata``, the request spec's image), which the cases
compare before and after each refusal.
"""

import json

from processes import HOST


class NovaDatabases:
    """Queries of ``nova_api`` and ``nova_cell1``."""

    def query(self, sql, args=None):
        """Rows of one SELECT in nova's databases, as the job's DB user."""
        import pymysql
        conn = pymysql.connect(host=HOST, port=self.port['mysql'],
                               user='nit', password=self.pw['db'],
                               charset='utf8')
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall()
        finally:
            conn.close()

    def wait_computes_report(self):
        """Until both computes reported their state since control started.

        A compute's state report that a stopped conductor took and never
        answered holds its next one for the RPC timeout (60 s), and the
        scheduler takes a compute silent for 60 s for down.
        """
        since = self.control_started
        self.wait_for('both computes reporting since %s' % since, lambda: (
            self.query("SELECT COUNT(*) FROM nova_cell1.services "
                       "WHERE `binary` = 'nova-compute' AND deleted = 0 "
                       "AND updated_at > %s", (since,))[0][0] == 2), 120, 2)

    def image_state(self, instance):
        """What nova's databases hold of INSTANCE's image, in one query.

        :returns: a dict: ``image_ref`` (instances), ``sysmeta`` (the
            ``image_*`` keys of instance_system_metadata), ``spec`` (the
            request spec's JSON) and ``spec_image`` (the id of its image)
        """
        rows = self.query(
            "SELECT 'ref', image_ref, NULL FROM nova_cell1.instances "
            "WHERE uuid = %(u)s AND deleted = 0 "
            "UNION ALL SELECT 'sys', `key`, value "
            "FROM nova_cell1.instance_system_metadata "
            "WHERE instance_uuid = %(u)s AND deleted = 0 "
            "AND `key` LIKE 'image\\_%%' "
            "UNION ALL SELECT 'spec', spec, NULL "
            "FROM nova_api.request_specs WHERE instance_uuid = %(u)s",
            {'u': instance})
        state = {'image_ref': None, 'sysmeta': {}, 'spec': None}
        for kind, a, b in rows:
            if kind == 'ref':
                state['image_ref'] = a
            elif kind == 'sys':
                state['sysmeta'][a] = b
            else:
                state['spec'] = a
        spec = json.loads(state['spec'] or '{}').get('nova_object.data', {})
        state['spec_image'] = (spec.get('image') or {}).get(
            'nova_object.data', {}).get('id')
        return state
