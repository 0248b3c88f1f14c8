/* skills_call.h — skill packages: sbx-skills behind /skill-packages, and
 * the package an execution mounts, verified on its fd. */
#ifndef SBX_HTTPD_SKILLS_CALL_H
#define SBX_HTTPD_SKILLS_CALL_H

#include "reply.h"

enum MHD_Result handle_skills(struct req *r, const char *id);
/* The package at root (<data>/skill-packages/<id>) as an O_RDONLY
 * directory fd that sbx-skills verified against its id (the id into id);
 * -1 when not held, -2 when it fails its integrity check. */
int skills_open_held(const char *root, char id[65]);
/* sbx-skills verify on an fd skills_open_held gave: 0, -1 not held, -2
 * failed its integrity check. */
int skills_verify_fd(int pkg, const char *id);

#endif
